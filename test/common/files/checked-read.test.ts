import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  readChecked,
  readCheckedSync,
  type CheckedRead,
  type CheckedReadOptions,
} from '../../../src/common/files/checked-read';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'checked-read-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const LIMIT: CheckedReadOptions = { maxBytes: 100, limitName: 'THE_LIMIT' };

function refusal(read: CheckedRead): string {
  if (!('refused' in read)) throw new Error(`read ${read.bytes.length} bytes`);
  return read.refused;
}

describe.each([
  ['at start (sync)', (file: string, options = LIMIT) => Promise.resolve(readCheckedSync(file, options))],
  ['on reload (async)', (file: string, options = LIMIT) => readChecked(file, options)],
])('a checked read %s', (_when, read) => {
  test('gives the bytes of a regular file within the limit, and of one exactly at it', async () => {
    const file = path.join(dir, 'ok.json');
    writeFileSync(file, '{"a":1}');
    const small = await read(file);
    expect('bytes' in small && small.bytes.toString()).toBe('{"a":1}');
    writeFileSync(file, 'x'.repeat(100));
    const full = await read(file);
    expect('bytes' in full && full.bytes.length).toBe(100);
  });

  test('refuses a file above the limit on its stated size (a sparse 10 GB file is never read)', async () => {
    const file = path.join(dir, 'huge');
    writeFileSync(file, '');
    truncateSync(file, 10 * 1024 ** 3);
    expect(refusal(await read(file))).toBe('it is 10737418240 bytes, above THE_LIMIT = 100');
  });

  test('cuts a file that reads longer than it states (a /proc file) at limit + 1 bytes', async () => {
    expect(refusal(await read('/proc/self/status'))).toBe(
      'it reads as more than 100 bytes, above THE_LIMIT = 100',
    );
  });

  test('refuses a FIFO without waiting for a writer, /dev/zero, a link to it and a folder', async () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(refusal(await read(fifo))).toBe('it is a FIFO (named pipe), not a regular file');
    expect(refusal(await read('/dev/zero'))).toBe('it is a character device, not a regular file');
    const link = path.join(dir, 'zero');
    symlinkSync('/dev/zero', link);
    expect(refusal(await read(link))).toBe('it is a character device, not a regular file');
    expect(refusal(await read(dir))).toBe('it is a directory, not a regular file');
  });

  test('names the error of a path that cannot be opened, and refuses a link when links are not followed', async () => {
    expect(await read(path.join(dir, 'absent'))).toMatchObject({
      refused: 'it cannot be read (ENOENT)',
      code: 'ENOENT',
    });
    const target = path.join(dir, 'target');
    writeFileSync(target, '{}');
    const link = path.join(dir, 'link');
    symlinkSync(target, link);
    expect('bytes' in (await read(link))).toBe(true);
    expect(refusal(await read(link, { ...LIMIT, noFollow: true }))).toBe(
      'it is a symbolic link, which is never followed here',
    );
  });
});
