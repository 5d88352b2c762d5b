import { readFileSync } from 'node:fs';
import { ConfigError } from './resolve';

/** A file named by a configuration variable, read at start; unreadable stops start-up naming the variable. */
export function readConfigFile(file: string, variable: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new ConfigError([`${variable}: cannot read ${JSON.stringify(file)} (${code})`]);
  }
}
