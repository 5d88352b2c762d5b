import request from 'supertest';
import { silentLogger } from '../../../src/common/logging/logger';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { capturingLogger } from '../../support/logger';
import { everyEnvironmentReady, proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';

const on = (name: string, project = 'default') => ({
  name,
  enabled: true,
  project,
  strategies: [{ name: 'default' }],
});

const DEV: FeaturesPayload = {
  version: 2,
  features: [
    on('dev-flag'),
    on('shop-flag', 'shop'),
    on('shared-flag'),
    {
      name: 'for-alice',
      enabled: true,
      project: 'default',
      strategies: [{ name: 'userWithId', parameters: { userIds: 'alice' } }],
    },
  ],
};
const PROD: FeaturesPayload = { version: 2, features: [on('prod-flag'), on('shared-flag')] };

// Tokens the scripted upstream confirms at POST /edge/validate.
const FE_DEV = '*:development.frontend-dev-1';
const FE_PROD = '*:production.frontend-prod-1';
const FE_SHOP = 'shop:development.frontend-shop-1';
const FE_MULTI = '[]:development.frontend-multi-1';
const FE_STAGING = '*:staging.frontend-staging-1';
const BE_DEV = '*:development.backend-dev-1';
const BE_SHOP = 'shop:development.backend-shop-1';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(DEV, UP_DEV).start();
  upstream.addToken(UP_PROD, PROD);
  const known = upstream.knownTokens;
  known.set(FE_DEV, { type: 'frontend', environment: 'development', projects: ['*'] });
  known.set(FE_PROD, { type: 'frontend', environment: 'production', projects: ['*'] });
  known.set(FE_SHOP, { type: 'frontend', environment: 'development', projects: ['shop'] });
  known.set(FE_MULTI, { type: 'frontend', environment: 'development', projects: ['shop', 'default'] });
  known.set(FE_STAGING, { type: 'frontend', environment: 'staging', projects: ['*'] });
  known.set(BE_DEV, { type: 'client', environment: 'development', projects: ['*'] });
  known.set(BE_SHOP, { type: 'client', environment: 'development', projects: ['shop'] });
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function twoEnvironments(options: Parameters<typeof proxyFor>[1] = {}): Promise<ProxyApp> {
  const app = proxyFor(upstream, {
    flagsApiToken: `${UP_DEV},${UP_PROD}`,
    clientKeys: ['plain-key', 'dev-key@development', 'prod-key@production'],
    enableAllEndpoint: true,
    ...options,
  });
  apps.push(app);
  await everyEnvironmentReady(app);
  return app;
}

const names = (body: { toggles: Array<{ name: string }> }): string[] =>
  body.toggles.map((t) => t.name).sort();

describe('several upstream tokens, one environment each', () => {
  test('each key is answered from its own environment on every evaluation path', async () => {
    const app = await twoEnvironments();
    for (const path of ['/proxy', '/proxy/all', '/api/frontend', '/api/proxy', '/api/proxy/all']) {
      const dev = await request(app).get(path).set('Authorization', 'dev-key');
      const prod = await request(app).get(path).set('Authorization', 'prod-key');
      const plain = await request(app).get(path).set('Authorization', 'plain-key');
      expect([path, dev.status, prod.status, plain.status]).toEqual([path, 200, 200, 200]);
      expect(names(prod.body)).toEqual(['prod-flag', 'shared-flag']);
      const devAll = path.endsWith('/all') ? ['dev-flag', 'for-alice', 'shared-flag', 'shop-flag'] : [];
      expect(names(dev.body)).toEqual(devAll.length > 0 ? devAll : ['dev-flag', 'shared-flag', 'shop-flag']);
      // a plain key is the first upstream token's, as in a single-environment proxy
      expect(names(plain.body)).toEqual(names(dev.body));
    }
  });

  test('each upstream token fetches its own definitions', async () => {
    await twoEnvironments();
    const auths = new Set(upstream.featureRequests().map((r) => r.headers.authorization));
    expect(auths).toEqual(new Set([UP_DEV, UP_PROD]));
  });

  test('the same context in two environments never shares an ETag, and each still revalidates to 304', async () => {
    const app = await twoEnvironments();
    const dev = await request(app)
      .post('/proxy')
      .set('Authorization', 'dev-key')
      .send({ toggles: ['shared-flag'] });
    const prod = await request(app)
      .post('/proxy')
      .set('Authorization', 'prod-key')
      .send({ toggles: ['shared-flag'] });
    expect(dev.body).toEqual(prod.body);
    expect(dev.headers.etag).toMatch(/^W\/"d-/);
    expect(prod.headers.etag).toMatch(/^W\/"d-/);
    expect(dev.headers.etag).not.toBe(prod.headers.etag);
    const again = await request(app)
      .post('/proxy')
      .set('Authorization', 'prod-key')
      .set('If-None-Match', dev.headers.etag)
      .send({ toggles: ['shared-flag'] });
    expect(again.status).toBe(200);
    const same = await request(app)
      .post('/proxy')
      .set('Authorization', 'prod-key')
      .set('If-None-Match', prod.headers.etag)
      .send({ toggles: ['shared-flag'] });
    expect(same.status).toBe(304);
  });

  test('two replicas give the same derived ETag to the same key scope and context', async () => {
    const one = await twoEnvironments();
    const two = await twoEnvironments();
    const a = await request(one).get('/proxy?userId=u1').set('Authorization', 'prod-key');
    const b = await request(two).get('/proxy?userId=u1').set('Authorization', 'prod-key');
    expect(a.headers.etag).toMatch(/^W\/"d-/);
    expect(a.headers.etag).toBe(b.headers.etag);
  });

  test("client usage sent with a key of one environment is forwarded with that environment's upstream token", async () => {
    const app = await twoEnvironments({ metricsInterval: 100 });
    const bucket = {
      start: new Date(Date.now() - 1000).toISOString(),
      stop: new Date().toISOString(),
      toggles: { 'prod-flag': { yes: 3, no: 0 } },
    };
    const sent = await request(app)
      .post('/api/proxy/client/metrics')
      .set('Authorization', 'prod-key')
      .send({ appName: 'prod-web', instanceId: 'browser', bucket });
    expect(sent.status).toBe(202);
    await waitFor(() =>
      upstream
        .posted('/api/client/metrics')
        .some((r) => (r.body as { appName?: string }).appName === 'prod-web'),
    );
    const forwarded = upstream
      .posted('/api/client/metrics')
      .filter((r) => (r.body as { appName?: string }).appName === 'prod-web');
    expect(forwarded.map((r) => r.headers.authorization)).toEqual(forwarded.map(() => UP_PROD));
  });

  test('a token the upstream refuses later answers 503 to its keys only, and health stays 200', async () => {
    const app = await twoEnvironments({ refreshInterval: 50 });
    // The upstream answers 401 to the production token from now on.
    upstream.removeToken(UP_PROD);
    await waitFor(
      async () => (await request(app).get('/proxy').set('Authorization', 'prod-key')).status === 503,
    );
    expect((await request(app).get('/proxy').set('Authorization', 'dev-key')).status).toBe(200);
    expect((await request(app).get('/proxy/health')).status).toBe(200);
    // a scrape shows the key's own environment, also while that one cannot be served
    const prodMetrics = await request(app)
      .get('/proxy/internal-backstage/prometheus')
      .set('Authorization', 'prod-key');
    expect(prodMetrics.status).toBe(200);
    expect(prodMetrics.text).toContain('flags_proxy_environment_ready{environment="production"} 0');
    expect(prodMetrics.text).not.toContain('environment="development"');
    const devMetrics = await request(app)
      .get('/proxy/internal-backstage/prometheus')
      .set('Authorization', 'dev-key');
    expect(devMetrics.text).toContain('flags_proxy_environment_ready{environment="development"} 1');
    expect(devMetrics.text).not.toContain('environment="production"');
  });

  test('a POST body with the context at its root (Unleash Edge’s form) is evaluated with that context', async () => {
    const app = await twoEnvironments();
    const res = await request(app)
      .post('/api/frontend')
      .set('Authorization', 'dev-key')
      .send({ userId: 'alice' });
    expect(res.status).toBe(200);
    expect(names(res.body)).toContain('for-alice');
    const other = await request(app)
      .post('/api/frontend')
      .set('Authorization', 'dev-key')
      .send({ userId: 'bob' });
    expect(names(other.body)).not.toContain('for-alice');
  });

  test('OFREP single and bulk evaluation answer from the key’s environment', async () => {
    const app = await twoEnvironments();
    const bulk = await request(app)
      .post('/ofrep/v1/evaluate/flags')
      .set('Authorization', 'prod-key')
      .send({ context: { targetingKey: 'u1' } });
    expect(bulk.status).toBe(200);
    expect((bulk.body.flags as Array<{ key: string }>).map((f) => f.key).sort()).toEqual([
      'prod-flag',
      'shared-flag',
    ]);
    const missing = await request(app)
      .post('/ofrep/v1/evaluate/flags/dev-flag')
      .set('Authorization', 'prod-key')
      .send({ context: { targetingKey: 'u1' } });
    expect(missing.status).toBe(404);
    const found = await request(app)
      .post('/ofrep/v1/evaluate/flags/dev-flag')
      .set('Authorization', 'dev-key')
      .send({ context: { targetingKey: 'u1' } });
    expect(found.status).toBe(200);
  });
});

describe('readiness per environment at start-up', () => {
  const UP_STAGING = '*:staging.upstream-staging-secret';
  const STAGING: FeaturesPayload = { version: 2, features: [on('staging-flag')] };
  const KEYS = ['dev-key@development', 'prod-key@production', 'staging-key@staging'];
  const refusedFetches = () =>
    upstream.featureRequests().filter((r) => r.headers.authorization === UP_STAGING).length;

  test('a token the upstream refuses at start-up answers 503 to its keys only; health is 200 once another environment is ready', async () => {
    const logger = capturingLogger();
    // The upstream does not know the third token: every fetch with it is answered 401.
    const app = proxyFor(upstream, {
      flagsApiToken: `${UP_DEV},${UP_PROD},${UP_STAGING}`,
      clientKeys: KEYS,
      refreshInterval: 50,
      logger,
    });
    apps.push(app);
    const url = await servers.listen(app);
    await waitFor(async () => (await fetch(`${url}/proxy/health`)).status === 200);
    await app.whenReady();
    await waitFor(
      async () => (await fetch(`${url}/proxy`, { headers: { Authorization: 'prod-key' } })).status === 200,
    );
    const dev = await fetch(`${url}/proxy`, { headers: { Authorization: 'dev-key' } });
    expect(dev.status).toBe(200);
    expect(names((await dev.json()) as { toggles: Array<{ name: string }> })).toEqual([
      'dev-flag',
      'shared-flag',
      'shop-flag',
    ]);
    // every path a staging key can take answers 503 (the front listener hands it to Express)
    for (const [path, method, body] of [
      ['/proxy', 'GET', undefined],
      ['/api/frontend', 'POST', '{"context":{}}'],
      ['/ofrep/v1/evaluate/flags', 'POST', '{"context":{}}'],
    ] as const) {
      const res = await fetch(`${url}${path}`, {
        method,
        body,
        headers: { Authorization: 'staging-key', 'Content-Type': 'application/json' },
      });
      expect([path, res.status, res.headers.get('retry-after')]).toEqual([path, 503, '1']);
    }
    // a request without a key is judged as at any ready proxy
    expect((await fetch(`${url}/proxy`)).status).toBe(401);
    // each key's scrape shows its own environment's readiness (a scrape is scoped to the key)
    const scrape = async (key: string): Promise<string> =>
      (await fetch(`${url}/proxy/internal-backstage/prometheus`, { headers: { Authorization: key } })).text();
    const [devScrape, prodScrape, stagingScrape] = await Promise.all(
      ['dev-key', 'prod-key', 'staging-key'].map(scrape),
    );
    expect(devScrape).toContain('flags_proxy_environment_ready{environment="development"} 1');
    expect(prodScrape).toContain('flags_proxy_environment_ready{environment="production"} 1');
    expect(stagingScrape).toContain('flags_proxy_environment_ready{environment="staging"} 0');
    for (const text of [devScrape, prodScrape, stagingScrape])
      expect(text).not.toContain('upstream-staging-secret');

    // one error line names the environment (never the token), however often the retries are refused
    await waitFor(() => refusedFetches() >= 3, 10_000);
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toContain('rejected the API token of environment "staging" (HTTP 401)');
    expect(JSON.stringify(logger.lines)).not.toContain('upstream-staging-secret');

    // once the upstream accepts it, its keys are served and that is logged
    upstream.addToken(UP_STAGING, STAGING);
    await waitFor(
      async () => (await fetch(`${url}/proxy`, { headers: { Authorization: 'staging-key' } })).status === 200,
      10_000,
    );
    expect(
      logger.lines.some((l) => l.level === 'info' && l.msg.includes('environment "staging" again')),
    ).toBe(true);
  });

  test('server-side SDK tokens read the first environment: 503 while it is refused, though another serves', async () => {
    const SERVER = 'server-sdk-token-1';
    const app = proxyFor(upstream, {
      flagsApiToken: `${UP_STAGING},${UP_DEV}`,
      clientKeys: KEYS.slice(0, 1).concat('staging-key@staging'),
      expServerSideSdkConfig: { tokens: [SERVER] },
    });
    apps.push(app);
    const url = await servers.listen(app);
    await waitFor(async () => (await fetch(`${url}/proxy/health`)).status === 200);
    await waitFor(() => refusedFetches() >= 1);
    const res = await fetch(`${url}/proxy/client/features`, { headers: { Authorization: SERVER } });
    expect(res.status).toBe(503);
    expect((await fetch(`${url}/proxy`, { headers: { Authorization: 'dev-key' } })).status).toBe(200);
  });

  test('with one upstream token, a refused one leaves the proxy not ready: every request 503 (specification §3)', async () => {
    const app = proxyFor(upstream, { flagsApiToken: UP_STAGING, clientKeys: ['staging-key'] });
    apps.push(app);
    const url = await servers.listen(app);
    await waitFor(() => refusedFetches() >= 1);
    for (const headers of [{}, { Authorization: 'staging-key' }, { Authorization: 'wrong' }] as Array<
      Record<string, string>
    >) {
      expect((await fetch(`${url}/proxy`, { headers })).status).toBe(503);
    }
    expect((await fetch(`${url}/proxy/health`)).status).toBe(503);
  });
});

describe('change streams per environment', () => {
  test('a stream is told of its own environment’s changes only', async () => {
    const app = await twoEnvironments({ refreshInterval: 50 });
    const url = await servers.listen(app);
    const controller = new AbortController();
    const res = await fetch(`${url}/ofrep/v1/flag-changes`, {
      headers: { Authorization: 'prod-key' },
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    let received = '';
    const reader = res.body!.getReader();
    const reading = (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        received += Buffer.from(value!).toString('utf8');
      }
    })();
    try {
      await waitFor(() => received.includes(': connected'));
      // development changes: the production stream hears nothing
      upstream.setFeatures({ ...DEV, features: [...DEV.features, on('new-dev-flag')] });
      await waitFor(async () =>
        names((await request(app).get('/proxy').set('Authorization', 'dev-key')).body).includes(
          'new-dev-flag',
        ),
      );
      expect(received).not.toContain('refetchEvaluation');
      // production changes: it is told
      upstream.addToken(UP_PROD, { ...PROD, features: [...PROD.features, on('new-prod-flag')] });
      await waitFor(() => received.includes('refetchEvaluation'));
    } finally {
      controller.abort();
      await reading;
    }
  });
});

describe('Unleash tokens validated upstream', () => {
  test('a frontend token the upstream confirms is served its environment, asked about once', async () => {
    const app = await twoEnvironments();
    const prod = await request(app).get('/api/frontend').set('Authorization', FE_PROD);
    expect(prod.status).toBe(200);
    expect(names(prod.body)).toEqual(['prod-flag', 'shared-flag']);
    const again = await request(app).get('/proxy').set('Authorization', FE_PROD);
    expect(again.status).toBe(200);
    expect(upstream.validationCalls()).toEqual([[FE_PROD]]);
  });

  test('the validation call is sent to the server root without any token in Authorization', async () => {
    const app = await twoEnvironments();
    await request(app).get('/proxy').set('Authorization', FE_DEV);
    const call = upstream.requests.find((r) => r.path === '/edge/validate');
    expect(call?.method).toBe('POST');
    expect(call?.headers.authorization).toBeUndefined();
  });

  test('a project-limited token sees only its projects, on every listing', async () => {
    const app = await twoEnvironments();
    const shop = await request(app).get('/proxy/all').set('Authorization', FE_SHOP);
    expect(names(shop.body)).toEqual(['shop-flag']);
    const named = await request(app)
      .post('/proxy')
      .set('Authorization', FE_SHOP)
      .send({ toggles: ['dev-flag', 'shop-flag'] });
    expect(named.body.toggles).toEqual([
      expect.objectContaining({ name: 'dev-flag', enabled: false }),
      expect.objectContaining({ name: 'shop-flag', enabled: true }),
    ]);
    const multi = await request(app).get('/proxy/all').set('Authorization', FE_MULTI);
    expect(names(multi.body)).toEqual(['dev-flag', 'for-alice', 'shared-flag', 'shop-flag']);
    const feature = await request(app).get('/api/frontend/features/dev-flag').set('Authorization', FE_SHOP);
    expect(feature.status).toBe(404);
  });

  test('a token of an environment no upstream token holds is refused without asking', async () => {
    const app = await twoEnvironments();
    const res = await request(app).get('/proxy').set('Authorization', FE_STAGING);
    expect(res.status).toBe(401);
    expect(res.body.name).toBe('AuthenticationRequired');
    expect(upstream.validationCalls()).toEqual([]);
  });

  test('a token the upstream does not confirm is refused, and the refusal is remembered', async () => {
    const app = await twoEnvironments();
    const wrong = '*:development.not-a-real-token';
    for (let i = 0; i < 3; i++)
      expect((await request(app).get('/proxy').set('Authorization', wrong)).status).toBe(401);
    expect(upstream.validationCalls()).toEqual([[wrong]]);
  });

  test('a string that is not token-shaped is refused without asking the upstream', async () => {
    const app = await twoEnvironments();
    for (const key of ['garbage', 'x'.repeat(600), 'a:b', '*:development']) {
      expect((await request(app).get('/proxy').set('Authorization', key)).status).toBe(401);
    }
    expect(upstream.validationCalls()).toEqual([]);
  });

  test('a flood of distinct token-shaped wrong keys costs the upstream a bounded number of batched calls', async () => {
    const app = await twoEnvironments();
    const url = await servers.listen(app);
    const keys = Array.from({ length: 300 }, (_, i) => `*:development.flood-${i}`);
    const startedAt = Date.now();
    const statuses = await Promise.all(
      keys.map((key) => fetch(`${url}/proxy`, { headers: { Authorization: key } }).then((r) => r.status)),
    );
    const elapsed = Date.now() - startedAt;
    expect(new Set(statuses)).toEqual(new Set([401]));
    const calls = upstream.validationCalls();
    // every key asked about once, in batches: one call at a time, at most one per 100 ms
    expect(calls.flat().sort()).toEqual([...keys].sort());
    expect(calls.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 1);
    // batched: fewer calls than keys, and calls carrying many keys at once (how many calls exactly
    // depends on how fast the 300 requests arrive, which a loaded machine decides)
    expect(calls.length).toBeLessThan(keys.length);
    expect(Math.max(...calls.map((c) => c.length))).toBeGreaterThan(1);
    // the same flood again is refused from memory
    await Promise.all(keys.map((key) => fetch(`${url}/proxy`, { headers: { Authorization: key } })));
    expect(upstream.validationCalls().length).toBe(calls.length);
  });

  test.each([
    ['404 (an upstream without /edge/validate)', { status: 404 }],
    ['500', { status: 500, body: 'oops' }],
    ['a body that is not JSON', { status: 200, body: '<html>' }],
    ['JSON of another shape', { status: 200, body: '{"tokens": "yes"}' }],
  ])(
    'an upstream answering %s means a 503 with Retry-After (never a 401 nor a 500), nothing remembered',
    async (_what, fault) => {
      const app = await twoEnvironments();
      upstream.validateFault = fault;
      const res = await request(app).get('/proxy').set('Authorization', FE_DEV);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
      expect(res.body).toEqual(expect.objectContaining({ name: 'NotReady' }));
      expect(JSON.stringify(res.body)).not.toContain('frontend-dev-1');
      // the token was not remembered as refused: once the upstream answers, it is accepted
      upstream.validateFault = undefined;
      await waitFor(
        async () => (await request(app).get('/proxy').set('Authorization', FE_DEV)).status === 200,
      );
      expect(upstream.validationCalls().length).toBeGreaterThanOrEqual(2);
    },
  );

  test('an accepted token is refused once the upstream stops confirming it at a revalidation', async () => {
    const app = await twoEnvironments();
    expect((await request(app).get('/proxy').set('Authorization', FE_DEV)).status).toBe(200);
    upstream.knownTokens.delete(FE_DEV);
    await app.tokenValidator?.revalidate();
    expect((await request(app).get('/proxy').set('Authorization', FE_DEV)).status).toBe(401);
  });

  test('accepted tokens are revalidated every FLAGS_TOKEN_REVALIDATE_INTERVAL', async () => {
    const app = await twoEnvironments({ tokenRevalidateInterval: 100 });
    expect((await request(app).get('/proxy').set('Authorization', FE_PROD)).status).toBe(200);
    upstream.knownTokens.delete(FE_PROD);
    await waitFor(
      async () => (await request(app).get('/proxy').set('Authorization', FE_PROD)).status === 401,
    );
  });

  test('FLAGS_UPSTREAM_TOKEN_VALIDATION=false refuses unconfigured tokens without asking', async () => {
    const app = await twoEnvironments({ upstreamTokenValidation: false });
    expect((await request(app).get('/proxy').set('Authorization', FE_DEV)).status).toBe(401);
    expect(upstream.validationCalls()).toEqual([]);
  });

  test("client keys are optional under Unleash Edge's names while validation is on and an upstream token names its environment", async () => {
    // Edge's variables (UPSTREAM_URL + TOKENS) choose Edge's contract; under FLAGS_* names the keys are required.
    const app = createApp(
      { refreshInterval: 200, metricsInterval: 60_000, logger: silentLogger },
      { UPSTREAM_URL: upstream.url, TOKENS: UP_DEV },
    );
    apps.push(app);
    await app.whenReady();
    expect(app.proxyConfig.clientKeys).toEqual([]);
    const res = await request(app).get('/proxy').set('Authorization', FE_DEV);
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(['dev-flag', 'shared-flag', 'shop-flag']);
    expect((await request(app).get('/proxy').set('Authorization', 'plain-key')).status).toBe(401);
  });

  test('a key of the form secret@environment naming an environment no upstream token holds stops start-up', () => {
    expect(() =>
      proxyFor(upstream, { flagsApiToken: `${UP_DEV},${UP_PROD}`, clientKeys: ['k@staging'] }),
    ).toThrow(/names an environment no upstream token/);
  });

  test('a pretrusted Unleash frontend token is served its scope without asking', async () => {
    const app = await twoEnvironments({ clientKeys: ['shop:development.pretrusted-shop'] });
    const res = await request(app).get('/proxy/all').set('Authorization', 'shop:development.pretrusted-shop');
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(['shop-flag']);
    expect(upstream.validationCalls()).toEqual([]);
  });
});

describe('the client API for backend SDKs', () => {
  test('a client token reads its environment’s definitions, limited to its projects, with ETag and 304', async () => {
    const app = await twoEnvironments();
    const all = await request(app).get('/api/client/features').set('Authorization', BE_DEV);
    expect(all.status).toBe(200);
    expect((all.body.features as Array<{ name: string }>).map((f) => f.name).sort()).toEqual([
      'dev-flag',
      'for-alice',
      'shared-flag',
      'shop-flag',
    ]);
    const shop = await request(app).get('/api/client/features').set('Authorization', BE_SHOP);
    expect((shop.body.features as Array<{ name: string }>).map((f) => f.name)).toEqual(['shop-flag']);
    expect(shop.headers.etag).not.toBe(all.headers.etag);
    const again = await request(app)
      .get('/api/client/features')
      .set('Authorization', BE_SHOP)
      .set('If-None-Match', shop.headers.etag);
    expect(again.status).toBe(304);
  });

  test('an upstream token reads its own environment through the proxy', async () => {
    const app = await twoEnvironments();
    const prod = await request(app).get('/api/client/features').set('Authorization', UP_PROD);
    expect((prod.body.features as Array<{ name: string }>).map((f) => f.name).sort()).toEqual([
      'prod-flag',
      'shared-flag',
    ]);
  });

  test('frontend tokens and keys are refused on the client API, client tokens on frontend paths', async () => {
    const app = await twoEnvironments();
    expect((await request(app).get('/api/client/features').set('Authorization', FE_DEV)).status).toBe(401);
    expect((await request(app).get('/api/client/features').set('Authorization', 'dev-key')).status).toBe(401);
    expect((await request(app).get('/api/client/features')).status).toBe(401);
    expect((await request(app).get('/proxy').set('Authorization', BE_DEV)).status).toBe(401);
  });

  test('register and metrics of a client token are accepted and forwarded with its environment’s token', async () => {
    const app = await twoEnvironments({ metricsInterval: 100 });
    const register = await request(app).post('/api/client/register').set('Authorization', BE_DEV).send({
      appName: 'backend-app',
      instanceId: 'i1',
      strategies: [],
      started: new Date().toISOString(),
      interval: 1000,
    });
    expect(register.status).toBe(202);
    const metrics = await request(app)
      .post('/api/client/metrics')
      .set('Authorization', BE_DEV)
      .send({
        appName: 'backend-app',
        instanceId: 'i1',
        bucket: {
          start: new Date(Date.now() - 1000).toISOString(),
          stop: new Date().toISOString(),
          toggles: { 'dev-flag': { yes: 1, no: 0 } },
        },
      });
    expect(metrics.status).toBe(202);
    await waitFor(() =>
      upstream
        .posted('/api/client/metrics')
        .some((r) => (r.body as { appName?: string }).appName === 'backend-app'),
    );
    const forwarded = upstream
      .posted('/api/client/metrics')
      .filter((r) => (r.body as { appName?: string }).appName === 'backend-app');
    expect(new Set(forwarded.map((r) => r.headers.authorization))).toEqual(new Set([UP_DEV]));
  });
});
