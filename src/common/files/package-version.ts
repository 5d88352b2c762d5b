import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from './package-root';

let cached: string | undefined;

/** The version in this package's package.json, read once (`0.0.0` when it cannot be read). */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  try {
    const file = path.join(packageRoot(), 'package.json');
    const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
    cached = typeof version === 'string' ? version : '0.0.0';
  } catch {
    cached = '0.0.0';
  }
  return cached;
}
