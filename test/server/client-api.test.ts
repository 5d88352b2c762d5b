import request from 'supertest';
import { ADMIN_TOKEN, CLIENT_TOKEN, backends, useTestServer } from './helpers/backends';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectError(res: request.Response, status: number, name: string, message?: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.body).toEqual({ id: expect.stringMatching(UUID), name, message: expect.any(String) });
  if (message) expect(res.body.message).toMatch(message);
}

const names = (res: request.Response): string[] =>
  (res.body.features as Array<{ name: string }>).map((f) => f.name).sort();

describe.each(backends())('client API on $name', (backend) => {
  const server = useTestServer(backend);

  const features = (query = '') =>
    request(server().app).get(`/api/client/features${query}`).set('Authorization', CLIENT_TOKEN);

  describe('GET /api/client/features', () => {
    it('serves every feature of the features file in the client-API format with a weak ETag', async () => {
      const res = await features();
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.headers.etag).toMatch(/^W\/"[^"]+"$/);
      expect(Object.keys(res.body).sort()).toEqual(['features', 'segments', 'version']);
      expect(res.body.version).toBe(2);
      expect(res.body.features).toHaveLength(10);
      expect(res.body.segments).toEqual([
        {
          id: 1,
          name: 'eu-users',
          constraints: [expect.objectContaining({ contextName: 'country', operator: 'IN', inverted: false })],
        },
      ]);
      const search = res.body.features.find((f: { name: string }) => f.name === 'search-v2');
      expect(search).toMatchObject({
        project: 'shop',
        enabled: true,
        impressionData: true,
        strategies: [
          { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId' }, constraints: [] },
        ],
      });
      expect(search.tags).toBeUndefined();
      const legacy = res.body.features.find((f: { name: string }) => f.name === 'legacy-export');
      expect(legacy.enabled).toBe(false);
    });

    it('answers 304 without a body for a matching If-None-Match, also with Cache-Control: no-cache', async () => {
      const first = await features();
      const etag = first.headers.etag as string;
      const again = await features().set('If-None-Match', etag);
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.etag).toBe(etag);
      const noCache = await features().set('If-None-Match', etag).set('Cache-Control', 'no-cache');
      expect(noCache.status).toBe(304);
      const other = await features().set('If-None-Match', 'W/"something-else"');
      expect(other.status).toBe(200);
    });

    it('filters by namePrefix', async () => {
      const res = await features('?namePrefix=search');
      expect(res.status).toBe(200);
      expect(names(res)).toEqual(['search-v2']);
      expect(res.body.segments).toEqual([]);
    });

    it('filters by repeated tag=type:value, matching any of them', async () => {
      const res = await features('?tag=team:search&tag=team:checkout');
      expect(names(res)).toEqual(['new-checkout', 'recommendations-widget', 'search-v2']);
      const one = await features('?tag=simple:compliance');
      expect(names(one)).toEqual(['eu-cookie-banner-v2']);
      expect(one.body.segments.map((s: { id: number }) => s.id)).toEqual([1]);
    });

    it('filters by project, combined with the other filters', async () => {
      expect(names(await features('?project=mobile'))).toEqual(['mobile-dark-mode']);
      expect(names(await features('?project=shop&namePrefix=s'))).toEqual([
        'search-v2',
        'spring-sale-banner',
      ]);
      expect(names(await features('?project=nope'))).toEqual([]);
    });

    it('gives each filter combination its own ETag, independent of the order of tags', async () => {
      const all = (await features()).headers.etag;
      const prefixed = (await features('?namePrefix=search')).headers.etag;
      const ab = (await features('?tag=team:search&tag=team:checkout')).headers.etag;
      const ba = (await features('?tag=team:checkout&tag=team:search')).headers.etag;
      expect(new Set([all, prefixed, ab]).size).toBe(3);
      expect(ab).toBe(ba);
      const mismatch = await features('?namePrefix=search').set('If-None-Match', all as string);
      expect(mismatch.status).toBe(200);
    });

    it('answers 400 ValidationError naming a malformed tag or a repeated namePrefix', async () => {
      expectError(await features('?tag=nocolon'), 400, 'ValidationError', /"tag" must look like type:value/);
      expectError(await features('?namePrefix=a&namePrefix=b'), 400, 'ValidationError', /"namePrefix"/);
    });

    it('answers 401 without or with an unknown token and 403 for an admin token', async () => {
      expectError(await request(server().app).get('/api/client/features'), 401, 'AuthenticationRequired');
      expectError(
        await request(server().app).get('/api/client/features').set('Authorization', 'nope'),
        401,
        'AuthenticationRequired',
      );
      expectError(
        await request(server().app).get('/api/client/features').set('Authorization', ADMIN_TOKEN),
        403,
        'NoAccessError',
        /admin token cannot be used on the client API/,
      );
      const bearer = await request(server().app)
        .get('/api/client/features')
        .set('Authorization', `Bearer ${CLIENT_TOKEN}`);
      expect(bearer.status).toBe(200);
    });
  });

  describe('POST /api/client/register', () => {
    const register = (body: unknown) =>
      request(server().app)
        .post('/api/client/register')
        .set('Authorization', CLIENT_TOKEN)
        .send(body as object);

    it('answers 202 and stores the instance, updating it on a second registration', async () => {
      const started = '2024-05-01T10:00:00.000Z';
      const res = await register({
        appName: 'checkout-service',
        instanceId: 'pod-1',
        sdkVersion: 'unleash-client-node:6.0.0',
        strategies: ['default', 'flexibleRollout'],
        started,
        interval: 10000,
        connectionId: 'ignored-extra-field',
      });
      expect(res.status).toBe(202);
      expect(res.text).toBe('');
      let [instance] = await server().stores.clients.instances('checkout-service');
      expect(instance).toMatchObject({
        appName: 'checkout-service',
        instanceId: 'pod-1',
        sdkVersion: 'unleash-client-node:6.0.0',
        strategies: ['default', 'flexibleRollout'],
        interval: 10000,
      });
      expect(instance.started?.toISOString()).toBe(started);
      expect(
        (
          await register({
            appName: 'checkout-service',
            instanceId: 'pod-1',
            started: Date.parse(started) + 1000,
          })
        ).status,
      ).toBe(202);
      const all = await server().stores.clients.instances('checkout-service');
      expect(all).toHaveLength(1);
      [instance] = all;
      expect(instance.started?.getTime()).toBe(Date.parse(started) + 1000);
      expect(instance.strategies).toEqual([]);
    });

    it('answers 400 ValidationError naming the field that is wrong', async () => {
      expectError(await register({ instanceId: 'x' }), 400, 'ValidationError', /appName/);
      expectError(await register({ appName: 'a' }), 400, 'ValidationError', /instanceId/);
      expectError(
        await register({ appName: 'a', instanceId: 'i', started: 'yesterday' }),
        400,
        'ValidationError',
        /started/,
      );
      expectError(
        await register({ appName: 'a', instanceId: 'i', interval: -1 }),
        400,
        'ValidationError',
        /interval/,
      );
      expectError(
        await register({ appName: 'a', instanceId: 'i', strategies: 'default' }),
        400,
        'ValidationError',
        /strategies/,
      );
    });

    it('answers 415 for a body that is not JSON and 401 before looking at the body', async () => {
      const text = await request(server().app)
        .post('/api/client/register')
        .set('Authorization', CLIENT_TOKEN)
        .type('text/plain')
        .send('x');
      expectError(text, 415, 'ContentTypeError');
      expectError(
        await request(server().app).post('/api/client/register').send({}),
        401,
        'AuthenticationRequired',
      );
    });
  });

  describe('POST /api/client/metrics', () => {
    const metrics = (body: unknown) =>
      request(server().app)
        .post('/api/client/metrics')
        .set('Authorization', CLIENT_TOKEN)
        .send(body as object);

    it('answers 202 and adds the counts per toggle, app and hour', async () => {
      const bucket = (
        start: string | number,
        stop: string | number,
        yes: number,
        no: number,
        variants?: Record<string, number>,
      ) => ({
        appName: 'metrics-app',
        instanceId: 'i-1',
        bucket: {
          start,
          stop,
          toggles: {
            'search-v2': { yes, no, ...(variants ? { variants } : {}) },
            'new-checkout': { yes: 1, no: 0 },
          },
        },
      });
      expect(
        (
          await metrics(
            bucket('2024-05-01T10:00:00.000Z', '2024-05-01T10:00:30.000Z', 3, 1, {
              control: 2,
              'ranking-b': 1,
            }),
          )
        ).status,
      ).toBe(202);
      expect(
        (
          await metrics(
            bucket(Date.parse('2024-05-01T10:59:00.000Z'), Date.parse('2024-05-01T10:59:30.000Z'), 2, 5, {
              control: 1,
            }),
          )
        ).status,
      ).toBe(202);
      expect(
        (await metrics(bucket('2024-05-01T11:00:10.000Z', '2024-05-01T11:00:40.000Z', 7, 0))).status,
      ).toBe(202);

      const usage = await server().stores.clients.usage({ appName: 'metrics-app', featureName: 'search-v2' });
      expect(usage).toEqual([
        {
          featureName: 'search-v2',
          appName: 'metrics-app',
          hour: new Date('2024-05-01T10:00:00.000Z'),
          yes: 5,
          no: 6,
          variants: { control: 3, 'ranking-b': 1 },
        },
        {
          featureName: 'search-v2',
          appName: 'metrics-app',
          hour: new Date('2024-05-01T11:00:00.000Z'),
          yes: 7,
          no: 0,
          variants: {},
        },
      ]);
      const checkout = await server().stores.clients.usage({
        appName: 'metrics-app',
        featureName: 'new-checkout',
      });
      expect(checkout.map((u) => u.yes)).toEqual([2, 1]);
      expect((await server().stores.clients.instances('metrics-app')).map((i) => i.instanceId)).toEqual([
        'i-1',
      ]);
    });

    it('keeps the counts of different apps apart', async () => {
      const body = (appName: string) => ({
        appName,
        instanceId: 'x',
        bucket: {
          start: '2024-06-01T08:00:00Z',
          stop: '2024-06-01T08:01:00Z',
          toggles: { 'beta-dashboard': { yes: 4, no: 4 } },
        },
      });
      await metrics(body('app-a'));
      await metrics(body('app-b'));
      await metrics(body('app-b'));
      expect(
        (await server().stores.clients.usage({ appName: 'app-a', featureName: 'beta-dashboard' }))[0].yes,
      ).toBe(4);
      expect(
        (await server().stores.clients.usage({ appName: 'app-b', featureName: 'beta-dashboard' }))[0].yes,
      ).toBe(8);
    });

    it('answers 400 ValidationError naming the field that is wrong, storing nothing', async () => {
      const good = {
        appName: 'bad-app',
        instanceId: 'i',
        bucket: {
          start: '2024-05-01T10:00:00Z',
          stop: '2024-05-01T10:01:00Z',
          toggles: { t: { yes: 1, no: 1 } },
        },
      };
      expectError(await metrics({ ...good, appName: '' }), 400, 'ValidationError', /appName/);
      expectError(await metrics({ ...good, bucket: undefined }), 400, 'ValidationError', /bucket/);
      expectError(
        await metrics({ ...good, bucket: { ...good.bucket, start: 'soon' } }),
        400,
        'ValidationError',
        /bucket\.start/,
      );
      expectError(
        await metrics({ ...good, bucket: { ...good.bucket, stop: '2024-05-01T09:00:00Z' } }),
        400,
        'ValidationError',
        /bucket\.stop: must not be before bucket\.start/,
      );
      expectError(
        await metrics({ ...good, bucket: { ...good.bucket, toggles: { t: { yes: -1, no: 0 } } } }),
        400,
        'ValidationError',
        /bucket\.toggles\.t\.yes/,
      );
      expectError(
        await metrics({
          ...good,
          bucket: { ...good.bucket, toggles: { t: { yes: 1, no: 0, variants: { a: 'x' } } } },
        }),
        400,
        'ValidationError',
        /bucket\.toggles\.t\.variants\.a/,
      );
      expect(await server().stores.clients.usage({ appName: 'bad-app' })).toEqual([]);
    });

    it('answers 403 for an admin token', async () => {
      const res = await request(server().app)
        .post('/api/client/metrics')
        .set('Authorization', ADMIN_TOKEN)
        .send({});
      expectError(res, 403, 'NoAccessError');
    });
  });

  it('answers GET /health with 200 while the database answers', async () => {
    const res = await request(server().app).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ health: 'GOOD' });
  });
});
