import request from 'supertest';
import { ADMIN_TOKEN, CLIENT_TOKEN, backends, useTestServer } from './helpers/backends';
import { captureLogger } from './helpers/capture-logger';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const NUL = '\u0000';

const TOKEN = { type: 'client', environment: 'development', tokenName: 'sdk' };
const REGISTER = {
  appName: 'shop',
  instanceId: 'i-1',
  sdkVersion: 'unleash-client-node:6.12.1',
  strategies: ['default', 'flexibleRollout'],
  interval: 15000,
};
const METRICS = {
  appName: 'shop',
  instanceId: 'i-1',
  bucket: {
    start: '2026-01-01T10:00:00.000Z',
    stop: '2026-01-01T10:00:15.000Z',
    toggles: { 'search-v2': { yes: 1, no: 2, variants: { blue: 1 } } },
  },
};

/** A request whose one field holds a NUL, and the field path the 400 must name. */
type Case = [field: string, path: string, body: object];

const TOKEN_CASES: Case[] = [
  ['tokenName', '/api/admin/api-tokens', { ...TOKEN, tokenName: `sdk${NUL}` }],
  ['environment', '/api/admin/api-tokens', { ...TOKEN, environment: `development${NUL}` }],
];
const CLIENT_CASES: Case[] = [
  ['appName', '/api/client/register', { ...REGISTER, appName: `sh${NUL}op` }],
  ['instanceId', '/api/client/register', { ...REGISTER, instanceId: NUL }],
  ['sdkVersion', '/api/client/register', { ...REGISTER, sdkVersion: `6${NUL}` }],
  ['strategies[1]', '/api/client/register', { ...REGISTER, strategies: ['default', `a${NUL}b`] }],
  ['appName', '/api/client/metrics', { ...METRICS, appName: `shop${NUL}` }],
  ['instanceId', '/api/client/metrics', { ...METRICS, instanceId: `i${NUL}` }],
  [
    'bucket.toggles',
    '/api/client/metrics',
    { ...METRICS, bucket: { ...METRICS.bucket, toggles: { [`t${NUL}`]: { yes: 1, no: 0 } } } },
  ],
  [
    'bucket.toggles.search-v2.variants',
    '/api/client/metrics',
    {
      ...METRICS,
      bucket: {
        ...METRICS.bucket,
        toggles: { 'search-v2': { yes: 1, no: 0, variants: { [`v${NUL}`]: 1 } } },
      },
    },
  ],
];

describe.each(backends())('a NUL character in a stored field on flags-server ($name)', (backend) => {
  const logger = captureLogger();
  const server = useTestServer(backend, { logger });
  beforeEach(() => logger.lines.splice(0));
  afterEach(() => {
    // A client's mistake never reaches a log line above info.
    expect(logger.lines.filter((l) => l.level !== 'debug' && l.level !== 'info')).toEqual([]);
  });

  const post = (path: string, token: string, body: object) =>
    request(server().app).post(path).set('Authorization', token).send(body);
  const count = async (sql: string) => Number((await server().db.query<{ n: number | string }>(sql))[0].n);

  it.each(TOKEN_CASES)(
    'POST /api/admin/api-tokens with a NUL in %s is a 400 ValidationError naming it, and stores no token',
    async (field, path, body) => {
      const before = await count("SELECT count(*) AS n FROM api_tokens WHERE source = 'admin-api'");
      const res = await post(path, ADMIN_TOKEN, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'ValidationError',
        message: expect.any(String),
      });
      expect(res.body.message).toContain(`${field}: must not contain the NUL character (U+0000)`);
      expect(await count("SELECT count(*) AS n FROM api_tokens WHERE source = 'admin-api'")).toBe(before);
    },
  );

  it.each(CLIENT_CASES)(
    'a NUL in %s of POST %s is a 400 ValidationError naming it',
    async (field, path, body) => {
      const res = await post(path, CLIENT_TOKEN, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'ValidationError',
        message: expect.any(String),
      });
      expect(res.body.message).toContain(field);
      expect(res.body.message).toContain('must not contain the NUL character (U+0000)');
      // Runs before the test that stores the requests without the NUL: nothing is stored yet.
      expect(await count('SELECT count(*) AS n FROM client_instances')).toBe(0);
      expect(await count('SELECT count(*) AS n FROM client_metrics_hourly')).toBe(0);
    },
  );

  it.each([
    ['tokenName', '/api/admin/api-tokens', ADMIN_TOKEN, { ...TOKEN, tokenName: 'sdk\uD800' }],
    ['description', '/api/admin/roles', ADMIN_TOKEN, { name: 'Surrogate', description: 'x\uDC00' }],
    ['strategies[0]', '/api/client/register', CLIENT_TOKEN, { ...REGISTER, strategies: ['\uD800'] }],
    [
      'bucket.toggles',
      '/api/client/metrics',
      CLIENT_TOKEN,
      { ...METRICS, bucket: { ...METRICS.bucket, toggles: { '\uDC00': { yes: 1, no: 0 } } } },
    ],
  ])(
    'a lone surrogate in %s of POST %s is a 400 ValidationError naming it (jsonb refuses it; text would store U+FFFD)',
    async (field, path, token, body) => {
      const res = await post(path, token, body);
      expect(res.status).toBe(400);
      expect(res.body.name).toBe('ValidationError');
      expect(res.body.message).toContain(`${field}`);
      expect(res.body.message).toContain('must not contain a lone surrogate');
      expect(await count("SELECT count(*) AS n FROM roles WHERE name = 'Surrogate'")).toBe(0);
    },
  );

  it('the same requests without the NUL are stored (the cases above fail on the NUL alone)', async () => {
    const token = await post('/api/admin/api-tokens', ADMIN_TOKEN, TOKEN);
    expect(token.status).toBe(201);
    expect(token.body.tokenName).toBe('sdk');
    expect((await post('/api/client/register', CLIENT_TOKEN, REGISTER)).status).toBe(202);
    expect((await post('/api/client/metrics', CLIENT_TOKEN, METRICS)).status).toBe(202);
    const [instance] = await server().stores.clients.instances('shop');
    expect(instance).toMatchObject({ instanceId: 'i-1', strategies: ['default', 'flexibleRollout'] });
    const [usage] = await server().stores.clients.usage({ appName: 'shop' });
    expect(usage).toMatchObject({ featureName: 'search-v2', yes: 1, no: 2 });
    expect({ ...usage.variants }).toEqual({ blue: 1 });
  });
});
