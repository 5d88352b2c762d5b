import { silentLogger } from '../../../src/common/logging/logger';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { contractOf } from '../../../src/proxy/config/contract';
import { EDGE_VARIABLES, edgeVariablesMarkdownTable } from '../../../src/proxy/config/edge-variables';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { sampleFeatures } from '../../support/fixtures';
import { freePort } from '../../support/listen';
import { assertBuilt, request, startProgram, waitForStatus, type Program } from '../../support/program';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

jest.setTimeout(60_000);

/** An upstream token in Unleash's format (it names its environment) and a frontend token of it. */
const UPSTREAM_TOKEN = '*:development.upstream-secret';
const FRONTEND_TOKEN = 'default:development.frontend-secret';

let upstream: TestUpstream;
let program: Program | undefined;

beforeAll(assertBuilt);
beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures(), UPSTREAM_TOKEN).start();
  upstream.knownTokens.set(FRONTEND_TOKEN, {
    type: 'frontend',
    environment: 'development',
    projects: ['default'],
  });
});
afterEach(async () => {
  await program?.kill();
  program = undefined;
  await upstream.stop();
});

/** Edge's `UPSTREAM_URL` is the server's base URL, without `/api`. */
const serverRoot = () => upstream.url.replace(/\/api$/, '');

describe('the contract the names choose (parsed)', () => {
  const edge = () => ({ UPSTREAM_URL: serverRoot(), TOKENS: UPSTREAM_TOKEN });

  test("Edge's names give port 3063, /all on and no required client keys", () => {
    const config = parseConfig({ logger: silentLogger }, edge());
    expect(config).toMatchObject({ contract: 'edge', port: 3063, enableAllEndpoint: true, clientKeys: [] });
  });

  test("under Edge's names PORT wins and DISABLE_ALL_ENDPOINT=true turns /all off", () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...edge(), PORT: '8080', DISABLE_ALL_ENDPOINT: 'true' },
    );
    expect(config).toMatchObject({ contract: 'edge', port: 8080, enableAllEndpoint: false });
  });

  test("the specification's names give port 3000 and /all off", () => {
    const config = parseConfig(
      { logger: silentLogger },
      { FLAGS_URL: upstream.url, FLAGS_API_TOKEN: UPSTREAM_TOKEN, FLAGS_PROXY_CLIENT_KEYS: 'k' },
    );
    expect(config).toMatchObject({ contract: 'specification', port: 3000, enableAllEndpoint: false });
  });

  test("Edge's intervals are read in seconds, and our millisecond names win", () => {
    const seconds = {
      FEATURES_REFRESH_INTERVAL_SECONDS: '15',
      METRICS_INTERVAL_SECONDS: '60',
      TOKEN_REVALIDATION_INTERVAL_SECONDS: '3600',
    };
    expect(parseConfig({ logger: silentLogger }, { ...edge(), ...seconds })).toMatchObject({
      refreshInterval: 15_000,
      metricsInterval: 60_000,
      tokenRevalidateInterval: 3_600_000,
    });
    const ours = {
      FLAGS_FETCH_INTERVAL: '700',
      FLAGS_METRICS_INTERVAL: '800',
      FLAGS_TOKEN_REVALIDATE_INTERVAL: '900',
    };
    expect(parseConfig({ logger: silentLogger }, { ...edge(), ...seconds, ...ours })).toMatchObject({
      refreshInterval: 700,
      metricsInterval: 800,
      tokenRevalidateInterval: 900,
    });
  });

  test('DISABLE_ALL_ENDPOINT=true wins over ENABLE_ALL_ENDPOINT=true', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...edge(), ENABLE_ALL_ENDPOINT: 'true', DISABLE_ALL_ENDPOINT: 'true' },
    );
    expect(config.enableAllEndpoint).toBe(false);
  });

  test('BOOTSTRAP_FILE without an upstream URL is detected as Edge (offline mode)', () => {
    // (offline mode itself is another part of issue 25: the detection is what is checked here)
    expect(contractOf({ BOOTSTRAP_FILE: '/tmp/features.json' }, {})).toBe('edge');
    expect(contractOf({ BOOTSTRAP_FILE: '/tmp/f.json', FLAGS_URL: 'http://u/api' }, {})).toBe(
      'specification',
    );
  });
});

describe('the contract the names choose (the built program)', () => {
  test("started by the specification's names without client keys, it refuses to start naming FLAGS_PROXY_CLIENT_KEYS", async () => {
    program = startProgram({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: UPSTREAM_TOKEN,
      PORT: String(await freePort()),
    });
    const { code, stderr } = await program.exited;
    expect(code).toBe(1);
    expect(stderr).toContain('FLAGS_PROXY_CLIENT_KEYS');
  });

  test("started by Edge's names without client keys, it runs on 3063 with /all on and says which contract", async () => {
    program = startProgram({ UPSTREAM_URL: serverRoot(), TOKENS: UPSTREAM_TOKEN, LOG_LEVEL: 'info' });
    const all = 'http://127.0.0.1:3063/api/frontend/all';
    await waitForStatus(program, all, 200, { headers: { authorization: FRONTEND_TOKEN } });
    const answer = await request(all, { headers: { authorization: FRONTEND_TOKEN } });
    const toggles = (JSON.parse(answer.body) as { toggles: Array<{ name: string; enabled: boolean }> })
      .toggles;
    expect(toggles.some((t) => !t.enabled)).toBe(true); // /all lists disabled toggles too
    expect(program.output()).toMatch(/listening on port 3063.*Unleash Edge's contract/);
    // a made-up token is still refused
    expect((await request(all, { headers: { authorization: 'default:development.made-up' } })).status).toBe(
      401,
    );
  });

  test("DISABLE_ALL_ENDPOINT=true gives /all's 501; BASE_PATH prefixes every path and TOKEN_HEADER carries the key", async () => {
    const port = await freePort();
    program = startProgram({
      UPSTREAM_URL: serverRoot(),
      TOKENS: UPSTREAM_TOKEN,
      PORT: String(port),
      DISABLE_ALL_ENDPOINT: 'true',
      BASE_PATH: '/edge-base',
      TOKEN_HEADER: 'X-Edge-Key',
    });
    const base = `http://127.0.0.1:${port}/edge-base`;
    const key = { 'x-edge-key': FRONTEND_TOKEN };
    await waitForStatus(program, `${base}/api/frontend`, 200, { headers: key });
    expect((await request(`${base}/api/frontend/all`, { headers: key })).status).toBe(501);
    expect((await request(`${base}/proxy/all`, { headers: key })).status).toBe(501);
    expect((await request(`http://127.0.0.1:${port}/api/frontend`, { headers: key })).status).toBe(404);
    // the key travels in TOKEN_HEADER's header, not in Authorization
    expect(
      (await request(`${base}/api/frontend`, { headers: { authorization: FRONTEND_TOKEN } })).status,
    ).toBe(401);
  });

  test('an unsupported Edge variable is named in one warning at start; HOSTNAME, set by every container, is not', async () => {
    program = startProgram({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: UPSTREAM_TOKEN,
      FLAGS_PROXY_CLIENT_KEYS: 'k',
      PORT: String(await freePort()),
      SENTRY_DSN: 'https://public@sentry.example/1',
      STREAMING: 'true',
      S3_BUCKET_NAME: 'flags',
      HOSTNAME: 'pod-7',
    });
    await waitFor(() => program?.output().includes('not supported here') ?? false, 20_000);
    const lines = program
      .output()
      .split('\n')
      .filter((line) => line.includes('not supported here'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('S3_BUCKET_NAME, STREAMING, SENTRY_DSN');
    expect(lines[0]).not.toContain('HOSTNAME');
    expect(lines[0]).toMatch(/warn/i);
  });
});

describe("the Edge page's table of Edge variables", () => {
  const page = readFileSync(path.resolve(__dirname, '../../../docs/unleash-edge.md'), 'utf8');

  test('is the table generated from the list of Edge variables (npm run docs)', () => {
    expect(page).toContain(edgeVariablesMarkdownTable());
  });

  test('names every variable once', () => {
    const names = EDGE_VARIABLES.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
  });

  test('every Edge name read as an alias is in the table as supported', () => {
    const supported = new Set(EDGE_VARIABLES.filter((v) => !v.unsupported).map((v) => v.name));
    for (const name of [
      'UPSTREAM_URL',
      'TOKENS',
      'PRETRUSTED_TOKENS',
      'REDIS_URL',
      'BASE_PATH',
      'TOKEN_HEADER',
    ])
      expect(supported).toContain(name);
  });
});
