import { readCheckedSync } from '../files/checked-read';
import { ConfigError } from './resolve';

/** Largest file a configuration variable may name (certificates, keys, CA bundles): 1 MiB. */
export const CONFIG_FILE_MAX_BYTES = 1024 * 1024;

/**
 * A file named by a configuration variable, read at start through one handle checked before reading
 * (a regular file of at most 1 MiB: a FIFO or a device never stalls start-up); anything else stops
 * start-up naming the variable.
 */
export function readConfigFile(file: string, variable: string): Buffer {
  const read = readCheckedSync(file, { maxBytes: CONFIG_FILE_MAX_BYTES, limitName: 'the limit of 1 MiB' });
  if (!('refused' in read)) return read.bytes;
  const why = 'code' in read && read.code !== undefined ? read.code : read.refused.replace(/^it /, '');
  throw new ConfigError([`${variable}: cannot read ${JSON.stringify(file)} (${why})`]);
}
