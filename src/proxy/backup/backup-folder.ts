import { mkdirSync, statSync, type Stats } from 'node:fs';
import { ConfigError } from '../../common/config/resolve';
import { kindOf } from '../../common/files/checked-read';

function problemOf(stats: Stats): string | undefined {
  if (!stats.isDirectory()) return `it is ${kindOf(stats)}, not a directory`;
  const uid = process.getuid?.();
  if (uid === undefined) return undefined; // no owners and modes to check (Windows)
  if ((stats.mode & 0o022) !== 0)
    return `others than its owner can write to it (mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')}); make it writable by its owner only (chmod go-w)`;
  if (stats.uid !== uid && stats.uid !== 0)
    return `it is owned by uid ${stats.uid}, neither this process's user (uid ${uid}) nor root`;
  return undefined;
}

/**
 * `BACKUP_FOLDER`, checked once at start: created (mode 0700) when missing; then it must be a
 * directory that only its owner can write, owned by this process's user or root, since whoever else
 * could write there could plant files or links where backups are written and read. Anything else
 * stops start-up naming the variable and the problem.
 */
export function checkBackupFolder(folder: string): void {
  const fail = (problem: string): never => {
    throw new ConfigError([`BACKUP_FOLDER ${JSON.stringify(folder)}: ${problem}`]);
  };
  let stats: Stats;
  try {
    const found = statSync(folder, { throwIfNoEntry: false });
    if (found === undefined) mkdirSync(folder, { recursive: true, mode: 0o700 });
    stats = found ?? statSync(folder);
  } catch (err) {
    return fail(`it cannot be created or read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const problem = problemOf(stats);
  if (problem !== undefined) fail(problem);
}
