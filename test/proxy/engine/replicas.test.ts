import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

let upstream: TestUpstream;
let replicas: ProxyApp[];

beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  // Two replicas behind one load balancer: same upstream, same options, separate processes' state.
  replicas = await Promise.all([
    readyProxyFor(upstream, { enableAllEndpoint: true }),
    readyProxyFor(upstream, { enableAllEndpoint: true }),
  ]);
});
afterEach(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await upstream.stop();
});

const context = { userId: 'beta-1', sessionId: 's-42', properties: { plan: 'pro', region: 'eu' } };

const calls: Array<[string, (app: ProxyApp) => request.Test]> = [
  [
    'GET /proxy',
    (app) =>
      request(app)
        .get('/proxy')
        .query({ userId: 'beta-1', sessionId: 's-42', 'properties[plan]': 'pro', region: 'eu' }),
  ],
  ['POST /proxy', (app) => request(app).post('/proxy').send({ context })],
  [
    'POST /proxy with toggles',
    (app) =>
      request(app)
        .post('/proxy')
        .send({ context, toggles: ['with-variants', 'always-on', 'nope'] }),
  ],
  ['GET /proxy/all', (app) => request(app).get('/proxy/all').query({ userId: 'beta-1', sessionId: 's-42' })],
  ['POST /proxy/all', (app) => request(app).post('/proxy/all').send({ context })],
];

test.each(calls)(
  "%s: two replicas give byte-identical bodies and the same ETag, and each answers 304 to the other's ETag",
  async (_name, call) => {
    const [a, b] = replicas;
    const first = await call(a).set('Authorization', CLIENT_KEY).set('Accept-Encoding', 'identity');
    const second = await call(b).set('Authorization', CLIENT_KEY).set('Accept-Encoding', 'identity');
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(first.headers.etag).toEqual(expect.any(String));
    expect(second.headers.etag).toBe(first.headers.etag);
    // a client moved to the other replica keeps its 304s
    const revalidated = await call(b)
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', String(first.headers.etag));
    expect(revalidated.status).toBe(304);
  },
);

test('replicas that saw different histories of the same definitions still give the same ETag', async () => {
  const [a] = replicas;
  const etagOf = async (app: ProxyApp) =>
    (await request(app).post('/proxy').set('Authorization', CLIENT_KEY).send({ context })).headers.etag;
  const before = await etagOf(a);
  upstream.setFeatures({ version: 2, features: [] });
  await waitFor(async () => (await etagOf(a)) !== before);
  upstream.setFeatures(sampleFeatures());
  await waitFor(async () => (await etagOf(a)) === before);
  const late = await readyProxyFor(upstream, { enableAllEndpoint: true });
  replicas.push(late);
  expect(await etagOf(late)).toBe(await etagOf(a));
});
