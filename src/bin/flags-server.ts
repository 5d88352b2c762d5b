#!/usr/bin/env node
import { ConfigError } from '../common/config/resolve';
import { FeaturesFileError } from '../server/features/feature-source';
import { serverCommand, serverHelp, serverVersion } from '../server/cli/command-line';
import { startFlagServer } from '../server';

const command = serverCommand(process.argv.slice(2));
if (command.kind === 'help') {
  process.stdout.write(serverHelp());
} else if (command.kind === 'version') {
  process.stdout.write(serverVersion());
} else if (command.kind === 'mistake') {
  process.stderr.write(`flags-server: ${command.message}\n`);
  process.exitCode = 2;
} else {
  startFlagServer().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      for (const line of err.problems) process.stderr.write(`flags-server: ${line}\n`);
    } else if (err instanceof FeaturesFileError) {
      process.stderr.write(`flags-server: ${err.message}\n`);
    } else {
      process.stderr.write(
        `flags-server: failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
    }
    process.exit(1);
  });
}
