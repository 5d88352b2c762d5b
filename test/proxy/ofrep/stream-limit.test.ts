import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { descriptorLimit, effectiveStreamLimit } from '../../../src/proxy/ofrep/stream-limit';

const limitsFile = (openFiles: string) => {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'limits-')), 'limits');
  writeFileSync(
    file,
    `Limit                     Soft Limit           Hard Limit           Units\nMax cpu time              unlimited            unlimited            seconds\nMax open files            ${openFiles}                files\n`,
  );
  return file;
};

describe('the stream limit', () => {
  test('reads the soft limit on open files', () => {
    expect(descriptorLimit(limitsFile('400                  4096'))).toBe(400);
  });

  test('has no descriptor limit when it is unlimited or cannot be read', () => {
    expect(descriptorLimit(limitsFile('unlimited            unlimited'))).toBeUndefined();
    expect(descriptorLimit('/no/such/file')).toBeUndefined();
  });

  test('is the configured limit, at most half the descriptors', () => {
    expect(effectiveStreamLimit(10_000, 400)).toBe(200);
    expect(effectiveStreamLimit(100, 400)).toBe(100);
    expect(effectiveStreamLimit(10_000, undefined)).toBe(10_000);
  });
});
