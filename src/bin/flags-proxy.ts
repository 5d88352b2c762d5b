#!/usr/bin/env node
import { ConfigError } from '../common/config/resolve';
import { optionsFromArguments } from '../proxy/offline/command-line';
import { start } from '../proxy/start';

const report = (err: unknown) => {
  const problems =
    err instanceof ConfigError ? err.problems : [err instanceof Error ? err.message : String(err)];
  for (const problem of problems) process.stderr.write(`flags-proxy: cannot start: ${problem}\n`);
  process.exit(1);
};

try {
  start(optionsFromArguments(process.argv.slice(2))).catch(report);
} catch (err) {
  report(err);
}
