#!/usr/bin/env node
import { ConfigError } from '../common/config/resolve';
import { start } from '../proxy/start';

start().catch((err: unknown) => {
  const problems =
    err instanceof ConfigError ? err.problems : [err instanceof Error ? err.message : String(err)];
  for (const problem of problems) process.stderr.write(`flags-proxy: cannot start: ${problem}\n`);
  process.exit(1);
});
