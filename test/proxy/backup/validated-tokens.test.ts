import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startBuiltProxy, type BuiltProxy } from '../../support/built-proxy';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

/**
 * Validated tokens survive a restart, as in Unleash Edge: the built program under Edge's names with
 * `BACKUP_FOLDER`, against a real upstream, stopped, then started again with the upstream down.
 */
jest.setTimeout(90_000);

const UP_DEV = '*:development.tokens-up-dev-secret';
const UP_PROD = '*:production.tokens-up-prod-secret';
const FRONT_DEV = '*:development.tokens-frontend-dev-secret';
const FRONT_PROD = '*:production.tokens-frontend-prod-secret';
/** Confirmed by the upstream, but never presented to the first run: it is never in a backup. */
const UNSEEN = '*:development.tokens-unseen-secret';
/** Refused by the upstream when the first run asks. */
const REFUSED = '*:development.tokens-refused-secret';
/** A production token written (by hand) into development's file only. */
const PLANTED = '*:production.tokens-planted-secret';

/** The digest the backup keeps, as docs/operations.md defines it. */
const digestOf = (token: string) =>
  createHash('sha256').update(`flags-proxy validated token\n${token}`).digest('hex');

let folder: string;
let upstream: TestUpstream;
const running: BuiltProxy[] = [];

beforeAll(async () => {
  folder = path.join(mkdtempSync(path.join(tmpdir(), 'backup-tokens-')), 'backups');
  const production = sampleFeatures();
  production.features = production.features.filter((f) => (f as { name: string }).name !== 'always-on');
  upstream = await new TestUpstream(sampleFeatures(), UP_DEV).addToken(UP_PROD, production).start();
  const frontend = (environment: string) => ({ type: 'frontend', environment, projects: ['*'] });
  upstream.knownTokens.set(FRONT_DEV, frontend('development'));
  upstream.knownTokens.set(FRONT_PROD, frontend('production'));
  upstream.knownTokens.set(UNSEEN, frontend('development'));
});
afterAll(async () => {
  for (const proxy of running.splice(0)) await proxy.stop();
  await upstream.stop().catch(() => undefined);
  rmSync(path.dirname(folder), { recursive: true, force: true });
});

async function start(upstreamUrl: string): Promise<BuiltProxy> {
  const proxy = await startBuiltProxy({
    UPSTREAM_URL: upstreamUrl,
    TOKENS: `${UP_DEV},${UP_PROD}`,
    BACKUP_FOLDER: folder,
    LOG_LEVEL: 'info',
  });
  running.push(proxy);
  return proxy;
}

async function frontend(proxy: BuiltProxy, token: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${proxy.origin}/api/frontend?userId=alice`, { headers: { authorization: token } });
  return { status: res.status, body: await res.text() };
}

interface StoredRecord {
  scope: { environment: string; projects: string };
  fetchedAt: number;
  tokens: Array<{
    digest: string;
    type: string;
    environment: string;
    projects: string[];
    validatedAt: number;
  }>;
  digest: string;
  definitions: unknown;
}

function records(): Map<string, { file: string; text: string; record: StoredRecord }> {
  const byEnvironment = new Map<string, { file: string; text: string; record: StoredRecord }>();
  for (const name of readdirSync(folder).filter((n) => n.endsWith('.json'))) {
    const file = path.join(folder, name);
    const text = readFileSync(file, 'utf8');
    const record = JSON.parse(text) as StoredRecord;
    byEnvironment.set(record.scope.environment, { file, text, record });
  }
  return byEnvironment;
}

/** Rewrites a record as the format says a writer does, its digest covering scope, time and tokens. */
function rewrite(file: string, record: StoredRecord): void {
  const json = JSON.stringify(record.definitions);
  const head = `"scope":${JSON.stringify(record.scope)},"fetchedAt":${record.fetchedAt},"tokens":${JSON.stringify(record.tokens)}`;
  const digest = createHash('sha256').update(`${head}\n${json}`).digest('hex');
  writeFileSync(file, `{"format":2,${head},"digest":"${digest}","definitions":${json}}`);
}

test('frontend tokens the upstream validated are served after a restart with the upstream down, with their own environment; no other token is', async () => {
  const upstreamUrl = upstream.url.replace(/\/api$/, '');
  const first = await start(upstreamUrl);
  const dev = await frontend(first, FRONT_DEV);
  const prod = await frontend(first, FRONT_PROD);
  expect(dev.status).toBe(200);
  expect(prod.status).toBe(200);
  expect(dev.body).not.toEqual(prod.body);
  expect((await frontend(first, REFUSED)).status).toBe(401);
  // the backups hold the validated tokens, each in its environment's file, as digests
  await waitFor(() => {
    const byEnvironment = records();
    return (
      byEnvironment.get('development')?.record.tokens.some((t) => t.digest === digestOf(FRONT_DEV)) ===
        true &&
      byEnvironment.get('production')?.record.tokens.some((t) => t.digest === digestOf(FRONT_PROD)) === true
    );
  }, 20_000);
  expect(await first.stop()).toBe(0);

  const byEnvironment = records();
  const development = byEnvironment.get('development');
  const production = byEnvironment.get('production');
  if (!development || !production) throw new Error('a backup file is missing');
  expect(development.record.tokens).toEqual([
    {
      digest: digestOf(FRONT_DEV),
      type: 'frontend',
      environment: 'development',
      projects: ['*'],
      validatedAt: expect.any(Number) as number,
    },
  ]);
  expect(production.record.tokens.map((t) => t.digest)).toEqual([digestOf(FRONT_PROD)]);
  for (const { text } of [development, production]) {
    expect(text).not.toContain('secret');
    expect(text).not.toContain(digestOf(REFUSED));
    expect(text).not.toContain(digestOf(UNSEEN));
  }

  // a production token planted in development's file, and a malformed entry: ignored, named once
  const planted = production.record.tokens[0];
  development.record.tokens.push({ ...planted, digest: digestOf(PLANTED) }, {
    digest: 'not a digest',
  } as unknown as StoredRecord['tokens'][number]);
  rewrite(development.file, development.record);

  await upstream.stop();
  const second = await start(upstreamUrl);
  await waitFor(() => (second.output().match(/ready from the backup folder/g) ?? []).length === 2, 30_000);
  expect(second.output()).toMatch(
    /ready from the backup folder \(record [0-9a-f]{12}, \d+ toggles, 1 validated tokens/,
  );

  const devAgain = await frontend(second, FRONT_DEV);
  expect(devAgain).toEqual({ status: 200, body: dev.body });
  const prodAgain = await frontend(second, FRONT_PROD);
  expect(prodAgain).toEqual({ status: 200, body: prod.body });
  // a production token is never served with development's answer, nor a development token with production's
  expect((await frontend(second, FRONT_DEV)).body).not.toEqual(prod.body);

  // tokens never validated by the first run: refused or unavailable, never served
  for (const token of [UNSEEN, REFUSED, PLANTED, '*:development.made-up-secret']) {
    expect((await frontend(second, token)).status).not.toBe(200);
  }
  const named = second
    .output()
    .split('\n')
    .filter((line) => line.includes('ignoring validated tokens'));
  expect(named).toHaveLength(1);
  expect(named[0]).toContain(
    `backup folder: ${development.file}: ignoring validated tokens: 1 malformed; those of another environment ("production"), not "development"`,
  );
  expect(second.output()).not.toMatch(/tokens-[a-z-]*secret/);
  expect(await second.stop()).toBe(0);
});
