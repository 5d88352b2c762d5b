import { silentLogger } from '../../../src/common/logging/logger';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { configProblems } from '../../support/config-problems';
import { sampleFeatures } from '../../support/fixtures';
import { childPort } from '../../support/listen';
import { assertBuilt, request, startProgram, waitForStatus, type Program } from '../../support/program';
import { waitFor } from '../../support/proxy';
import { TestUpstream, type CapturedRequest } from '../../support/upstream';

jest.setTimeout(60_000);

const UPSTREAM_TOKEN = '*:development.upstream-secret';
const KEY = 'headers-key';
const GATEWAY_SECRET = 'gw-secret-4711';
const BASE_ENV = { FLAGS_URL: 'http://u/api', FLAGS_API_TOKEN: 't', FLAGS_PROXY_CLIENT_KEYS: 'k' };

describe('CUSTOM_CLIENT_HEADERS and UPSTREAM_REQUEST_TIMEOUT (parsed)', () => {
  test("Edge's form `Name: value,Name2: value2` is read, a value may hold colons", () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...BASE_ENV, CUSTOM_CLIENT_HEADERS: 'X-Api-Key: abc,X-Route: a:b:c' },
    );
    expect(config.customClientHeaders).toEqual({ 'X-Api-Key': 'abc', 'X-Route': 'a:b:c' });
  });

  test.each(['just-a-secret-value', 'Bad Name: v', 'X-Empty:'])(
    'CUSTOM_CLIENT_HEADERS=%j stops start-up naming the variable, never the value',
    (value) => {
      const problems = configProblems(() =>
        parseConfig({ logger: silentLogger }, { ...BASE_ENV, CUSTOM_CLIENT_HEADERS: value }),
      ).join('\n');
      expect(problems).toContain('Invalid CUSTOM_CLIENT_HEADERS: must be comma-separated headers');
      expect(problems).not.toContain(value);
    },
  );

  test('UPSTREAM_REQUEST_TIMEOUT is seconds, and 0 is refused', () => {
    expect(
      parseConfig({ logger: silentLogger }, { ...BASE_ENV, UPSTREAM_REQUEST_TIMEOUT: '3' })
        .upstreamRequestTimeout,
    ).toBe(3000);
    expect(parseConfig({ logger: silentLogger }, BASE_ENV).upstreamRequestTimeout).toBeUndefined();
    expect(
      configProblems(() =>
        parseConfig({ logger: silentLogger }, { ...BASE_ENV, UPSTREAM_REQUEST_TIMEOUT: '0' }),
      ),
    ).toContain('UPSTREAM_REQUEST_TIMEOUT must be a positive number of seconds');
  });

  test('SKIP_SSL_VERIFICATION=true stops verifying the upstream certificate', () => {
    const config = parseConfig({ logger: silentLogger }, { ...BASE_ENV, SKIP_SSL_VERIFICATION: 'true' });
    expect(config.httpOptions.rejectUnauthorized).toBe(false);
  });
});

describe('CUSTOM_CLIENT_HEADERS go with every upstream request (the built program)', () => {
  let upstream: TestUpstream;
  let program: Program | undefined;

  beforeAll(assertBuilt);
  beforeEach(async () => {
    upstream = await new TestUpstream(sampleFeatures(), UPSTREAM_TOKEN).start();
  });
  afterEach(async () => {
    await program?.kill();
    program = undefined;
    await upstream.stop();
  });

  const carriesCustom = (r: CapturedRequest) =>
    r.headers['x-gateway-key'] === GATEWAY_SECRET && r.headers['x-team'] === 'web:frontend';

  test('definitions, register, usage and token validation carry them; the upstream token still wins over a custom Authorization', async () => {
    program = startProgram({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: UPSTREAM_TOKEN,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: '0',
      FLAGS_METRICS_INTERVAL: '500',
      CUSTOM_CLIENT_HEADERS: `X-Gateway-Key: ${GATEWAY_SECRET},X-Team: web:frontend,Authorization: gateway-auth`,
      LOG_LEVEL: 'debug',
    });
    const base = `http://127.0.0.1:${await childPort(program.child, program.output)}`;
    // Ready means the features fetch carried the upstream token, not the custom Authorization.
    await waitForStatus(program, `${base}/proxy`, 200, { headers: { authorization: KEY } });
    const features = upstream.featureRequests();
    expect(features.every(carriesCustom)).toBe(true);
    expect(features.every((r) => r.headers.authorization === UPSTREAM_TOKEN)).toBe(true);

    await waitFor(() => upstream.posted('/api/client/register').length > 0, 20_000);
    expect(upstream.posted('/api/client/register').every(carriesCustom)).toBe(true);

    const usage = {
      appName: 'web-app',
      instanceId: 'browser-1',
      bucket: {
        start: new Date().toISOString(),
        stop: new Date().toISOString(),
        toggles: { 'new-checkout': { yes: 3, no: 1 } },
      },
    };
    const posted = await request(`${base}/proxy/client/metrics`, {
      method: 'POST',
      headers: { authorization: KEY, 'content-type': 'application/json' },
      body: JSON.stringify(usage),
    });
    expect(posted.status).toBeLessThan(300);
    await waitFor(
      () => upstream.posted('/api/client/metrics').some((r) => JSON.stringify(r.body).includes('web-app')),
      20_000,
    );
    const metrics = upstream.posted('/api/client/metrics');
    expect(metrics.every(carriesCustom)).toBe(true);
    expect(metrics.every((r) => r.headers.authorization === UPSTREAM_TOKEN)).toBe(true);

    // An unconfigured key in Unleash's format is asked about at /edge/validate.
    await request(`${base}/proxy`, { headers: { authorization: 'default:development.unknown-token' } });
    const validations = upstream.requests.filter((r) => r.path === '/edge/validate');
    expect(validations.length).toBeGreaterThan(0);
    expect(validations.every(carriesCustom)).toBe(true);

    // The values are secrets: never in a log line, not even the debug dump of the configuration.
    expect(program.output()).toContain('effective configuration');
    expect(program.output()).not.toContain(GATEWAY_SECRET);
  });
});
