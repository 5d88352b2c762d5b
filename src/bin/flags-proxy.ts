#!/usr/bin/env node
import { ConfigError } from '../common/config/resolve';
import { helpText, packageVersion } from '../proxy/command-line/help';
import { environmentWith, namingFlags, parseArguments } from '../proxy/command-line/parse-arguments';
import { probe } from '../proxy/command-line/probe';

/** The variables a flag set, named as the flag in problems. */
let flagNames: Record<string, string> = {};

const report = (err: unknown) => {
  const problems =
    err instanceof ConfigError ? err.problems : [err instanceof Error ? err.message : String(err)];
  for (const problem of problems)
    process.stderr.write(`flags-proxy: cannot start: ${namingFlags(problem, flagNames)}\n`);
  process.exit(1);
};

function main(): void {
  const command = parseArguments(process.argv.slice(2));
  if (command.kind === 'help') {
    process.stdout.write(helpText());
    return;
  }
  if (command.kind === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  flagNames = command.flags;
  const env = environmentWith(process.env, command.variables);
  if (command.kind === 'check') {
    void probe(command.endpoint, env).then(({ ok, line }) => {
      (ok ? process.stdout : process.stderr).write(
        `flags-proxy ${command.endpoint}: ${namingFlags(line, flagNames)}\n`,
      );
      process.exit(ok ? 0 : 1);
    });
    return;
  }
  // Loaded only to serve: `health` and `ready` answer without loading the proxy.
  import('../proxy/start').then(({ start }) => start(command.options, env)).catch(report);
}

try {
  main();
} catch (err) {
  report(err);
}
