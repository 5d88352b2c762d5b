import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { Logger } from '../../src/common/logging/logger';
import { EXAMPLE_FEATURES_FILE, createFlagServer, type FlagServer } from '../../src/server';
import { loadFeaturesFile } from '../../src/server/features/feature-source';
import { CLIENT_TOKEN, TOKENS } from './helpers/backends';
import { waitFor } from './helpers/wait';
import { freshPgliteDir } from '../support/pglite';

function captureLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  const none = () => undefined;
  return {
    errors,
    debug: none,
    info: none,
    warn: none,
    fatal: none,
    error: (msg: string) => errors.push(msg),
  };
}

const minimal = (features: Array<Record<string, unknown>>) =>
  JSON.stringify({ version: 2, features, segments: [] });

describe('the features file', () => {
  let dir: string;
  let file: string;
  let server: FlagServer;
  let logger: ReturnType<typeof captureLogger>;
  // PGlite in a copy of the initdb'd template, not 'memory' (initdb, seconds of CPU, at each start)
  let database: Awaited<ReturnType<typeof freshPgliteDir>>;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'flags-features-'));
    file = path.join(dir, 'features.json');
    copyFileSync(EXAMPLE_FEATURES_FILE, file);
    logger = captureLogger();
    database = await freshPgliteDir();
    server = await createFlagServer(
      { ...TOKENS, dataDir: database.dataDir, featuresFile: file, featuresWatchInterval: 20, logger },
      {},
    );
  });
  afterAll(async () => {
    await server.close();
    await database.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (etag?: string) => {
    const req = request(server.app).get('/api/client/features').set('Authorization', CLIENT_TOKEN);
    return etag ? req.set('If-None-Match', etag) : req;
  };

  it('serves a change of the file with a new revision and a new ETag', async () => {
    const before = await get();
    expect(before.body.features).toHaveLength(10);
    const revision = server.features.current().revision;
    writeFileSync(file, minimal([{ name: 'only-flag', enabled: true, strategies: [{ name: 'default' }] }]));
    const after = await waitFor(
      async () => {
        const res = await get(before.headers.etag as string);
        return res.status === 200 ? res : undefined;
      },
      5000,
      'the new definitions',
    );
    expect(after.headers.etag).not.toBe(before.headers.etag);
    expect(after.body.features).toEqual([
      expect.objectContaining({
        name: 'only-flag',
        enabled: true,
        project: 'default',
        impressionData: false,
        variants: [],
      }),
    ]);
    expect(server.features.current().revision).toBe(revision + 1);
    expect((await get(after.headers.etag as string)).status).toBe(304);
  });

  it('keeps serving the last good definitions when the file becomes invalid, and logs the problem', async () => {
    const good = await get();
    const revision = server.features.current().revision;
    writeFileSync(file, '{ "features": [ { "name": "broken", ');
    await waitFor(
      () => (logger.errors.some((e) => e.includes('not valid JSON')) ? true : undefined),
      5000,
      'the JSON error',
    );
    writeFileSync(
      file,
      minimal([
        {
          name: 'bad-semver',
          enabled: true,
          strategies: [
            {
              name: 'default',
              constraints: [{ contextName: 'appVersion', operator: 'SEMVER_GT', value: 'two' }],
            },
          ],
        },
      ]),
    );
    const message = await waitFor(
      () => logger.errors.find((e) => e.includes('SEMVER_GT')),
      5000,
      'the validation error',
    );
    expect(message).toMatch(
      /features\[0\]\.strategies\[0\]\.constraints\[0\]\.value: operator SEMVER_GT needs a semantic version/,
    );
    expect(message).toMatch(/keeping the last good definitions/);
    const still = await get(good.headers.etag as string);
    expect(still.status).toBe(304);
    expect(server.features.current().revision).toBe(revision);
    writeFileSync(file, minimal([{ name: 'recovered', enabled: false }]));
    const recovered = await waitFor(
      async () => {
        const res = await get();
        return res.body.features?.[0]?.name === 'recovered' ? res : undefined;
      },
      5000,
      'the recovered definitions',
    );
    expect(recovered.headers.etag).not.toBe(good.headers.etag);
  });
});

describe('validation of the features file', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'flags-validate-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const load = (content: unknown) => {
    const file = path.join(dir, `f${Math.random()}.json`);
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
    return loadFeaturesFile(file);
  };

  it('accepts the shipped example with all its strategies, constraints, segments and variants', async () => {
    const loaded = await load(readFileSync(EXAMPLE_FEATURES_FILE, 'utf8'));
    expect(loaded.features).toHaveLength(10);
    const operators = loaded.features.flatMap((f) =>
      f.strategies.flatMap((s) => s.constraints.map((c) => c.operator)),
    );
    expect(operators).toEqual(
      expect.arrayContaining(['SEMVER_GT', 'DATE_AFTER', 'NUM_GT', 'IN', 'NOT_IN', 'STR_CONTAINS']),
    );
    const strategies = new Set(loaded.features.flatMap((f) => f.strategies.map((s) => s.name)));
    expect([...strategies].sort()).toEqual(['default', 'flexibleRollout', 'remoteAddress', 'userWithId']);
    expect(loaded.features.some((f) => !f.enabled)).toBe(true);
    expect(loaded.features.some((f) => f.impressionData)).toBe(true);
    const payloadTypes = new Set(loaded.features.flatMap((f) => f.variants.map((v) => v.payload?.type)));
    expect(payloadTypes).toEqual(new Set(['json', 'string', undefined]));
  });

  it.each([
    [
      {
        features: [
          { name: 'a', enabled: true },
          { name: 'a', enabled: false },
        ],
      },
      /features\[1\]\.name: duplicate feature name "a"/,
    ],
    [
      { features: [{ name: 'a', enabled: true, strategies: [{ name: 'default', segments: [9] }] }] },
      /segment 9 is not defined/,
    ],
    [
      {
        features: [
          {
            name: 'a',
            enabled: true,
            strategies: [{ name: 'flexibleRollout', parameters: { rollout: '150' } }],
          },
        ],
      },
      /rollout/,
    ],
    [
      {
        features: [
          {
            name: 'a',
            enabled: true,
            strategies: [
              { name: 'default', constraints: [{ contextName: 'x', operator: 'LIKE', values: [] }] },
            ],
          },
        ],
      },
      /constraints\[0\]\.operator/,
    ],
    [
      {
        features: [
          {
            name: 'a',
            enabled: true,
            strategies: [{ name: 'default', constraints: [{ contextName: 'x', operator: 'IN' }] }],
          },
        ],
      },
      /needs a non-empty "values"/,
    ],
    [
      {
        features: [
          {
            name: 'a',
            enabled: true,
            strategies: [
              { name: 'default', constraints: [{ contextName: 'x', operator: 'DATE_AFTER', value: 'soon' }] },
            ],
          },
        ],
      },
      /needs an ISO date/,
    ],
    [
      {
        features: [
          {
            name: 'a',
            enabled: true,
            variants: [{ name: 'v', weight: 1000, payload: { type: 'json', value: '{nope' } }],
          },
        ],
      },
      /variants\[0\]\.payload\.value/,
    ],
    [{ features: [{ name: 'a' }] }, /features\[0\]\.enabled/],
    [{ feature: [] }, /features/],
  ])('rejects an invalid file naming the problem (%#)', async (content, problem) => {
    await expect(load(content)).rejects.toThrow(problem);
  });

  it('refuses a FIFO (without waiting for a writer) and /dev/zero on their handles, never reading them', async () => {
    const fifo = path.join(dir, 'features.fifo');
    execFileSync('mkfifo', [fifo]);
    await expect(loadFeaturesFile(fifo)).rejects.toThrow(
      `cannot read features file ${fifo}: it is a FIFO (named pipe), not a regular file`,
    );
    await expect(loadFeaturesFile('/dev/zero')).rejects.toThrow(
      'cannot read features file /dev/zero: it is a character device, not a regular file',
    );
  });

  it('rejects a file that is not JSON', async () => {
    await expect(load('nope')).rejects.toThrow(/is not valid JSON/);
  });

  it('stops start-up when the file is invalid at start', async () => {
    const file = path.join(dir, 'bad.json');
    writeFileSync(file, '{}');
    const fresh = await freshPgliteDir();
    try {
      await expect(
        createFlagServer(
          {
            ...TOKENS,
            dataDir: fresh.dataDir,
            featuresFile: file,
            featuresWatchInterval: 0,
            logger: captureLogger(),
          },
          {},
        ),
      ).rejects.toThrow(/features file .*bad\.json is not valid: features/);
    } finally {
      await fresh.remove();
    }
  });
});
