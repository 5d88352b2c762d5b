import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A data directory in which PGlite ran initdb and nothing else: PGlite's initdb is seconds of CPU,
 * opening a directory it initialised a fraction of one. Made once per PGlite version (in a child
 * process: PGlite cannot load its WebAssembly inside Jest's VM) and shared by every test file of
 * the run, each of which works on a copy of its own.
 */
export async function pgliteTemplate(): Promise<string> {
  const manifest = path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json');
  const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
  const template = path.join(tmpdir(), `flags-pglite-initdb-${version}-${process.getuid?.() ?? 'user'}`);
  if (
    await stat(path.join(template, 'PG_VERSION')).then(
      () => true,
      () => false,
    )
  )
    return template;
  const making = await mkdtemp(`${template}.making-`);
  const script =
    "const { PGlite } = require('@electric-sql/pglite');" +
    '(async () => { const db = new PGlite(process.argv[1]); await db.waitReady; await db.close(); })()' +
    '.catch((e) => { console.error(e); process.exit(1); });';
  await new Promise<void>((resolve, reject) =>
    execFile(process.execPath, ['-e', script, path.join(making, 'data')], { cwd: ROOT }, (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  // Atomic: another worker may have made it meanwhile; then its copy is used and this one dropped.
  await rename(path.join(making, 'data'), template).catch(() => undefined);
  await rm(making, { recursive: true, force: true });
  return template;
}

/**
 * A fresh folder for a flags-server's PGlite (`dataDir`): a copy of `pgliteTemplate()`, empty but for
 * initdb's catalog, which the server migrates and seeds as on any first start; `remove` deletes it.
 */
export async function freshPgliteDir(): Promise<{ dataDir: string; remove: () => Promise<void> }> {
  const template = await pgliteTemplate();
  const dir = await mkdtemp(path.join(tmpdir(), 'flags-pglite-'));
  const dataDir = path.join(dir, 'data');
  // cp(1): several times faster than Node's copy for initdb's thousand small files
  await new Promise<void>((resolve, reject) =>
    execFile('cp', ['-R', template, dataDir], (err) => (err ? reject(err) : resolve())),
  );
  return { dataDir, remove: () => rm(dir, { recursive: true, force: true }) };
}
