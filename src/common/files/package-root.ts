import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The folder holding this package's package.json, found by walking up from this file. The code runs
 * from `src/` (ts-jest) and from `dist/src/` (after tsc), and non-TS files (migrations, the example
 * features file) are not copied by tsc, so they are located relative to the package root.
 */
export function packageRoot(start: string = __dirname): string {
  let dir = start;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'src', 'server'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`Cannot find the flags-proxy package root above ${start}`);
    dir = parent;
  }
}
