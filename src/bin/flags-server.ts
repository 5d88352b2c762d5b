#!/usr/bin/env node
import { ConfigError } from '../common/config/resolve';
import { FeaturesFileError } from '../server/features/feature-source';
import { startFlagServer } from '../server';

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
