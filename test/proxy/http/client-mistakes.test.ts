import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

let upstream: TestUpstream;
let app: ProxyApp;
let server: http.Server;
let port: number;
const logger = capturingLogger();

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  app = await readyProxyFor(upstream, { logger });
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await app.close();
  await upstream.stop();
});

beforeEach(() => {
  logger.lines.length = 0;
});

const loud = () =>
  logger.lines.filter((l) => l.level === 'error' || l.level === 'warn' || l.level === 'fatal');

/** A raw request, so bodies and paths travel byte for byte as written. */
function send(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('requests the client got wrong are 4xx, never 500, and log no error line', () => {
  test('an OFREP flag key that is not valid percent-encoding is a 401 without a key and a 400 with one', async () => {
    const withoutKey = await request(app).post('/ofrep/v1/evaluate/flags/%ZZ').send({});
    expect(withoutKey.status).toBe(401);
    const withKey = await request(app)
      .post('/ofrep/v1/evaluate/flags/%ZZ')
      .set('Authorization', CLIENT_KEY)
      .send({ context: {} });
    expect(withKey.status).toBe(400);
    expect(withKey.body).toEqual({
      errorCode: 'PARSE_ERROR',
      errorDetails: expect.stringContaining('not valid percent-encoding'),
    });
    expect(loud()).toEqual([]);
  });

  test('a frontend-API feature name that is not valid percent-encoding is a 401 without a key and a 400 with one', async () => {
    expect((await request(app).get('/api/frontend/features/%ZZ')).status).toBe(401);
    const res = await request(app).get('/api/frontend/features/%ZZ').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'ValidationError',
      message: expect.stringContaining('not valid percent-encoding'),
    });
    expect(loud()).toEqual([]);
  });

  test.each(['gzip', 'deflate', 'br'])(
    'a body that is not valid %s data is a 400 naming the encoding',
    async (encoding) => {
      const headers = {
        authorization: CLIENT_KEY,
        'content-type': 'application/json',
        'content-encoding': encoding,
      };
      const body = Buffer.from('this is not compressed at all');
      for (const path of ['/proxy', '/api/frontend', '/ofrep/v1/evaluate/flags']) {
        const res = await send('POST', path, headers, body);
        expect({ path, status: res.status }).toEqual({ path, status: 400 });
        expect(res.text).toContain(`not valid \\"${encoding}\\" data`);
      }
      expect(loud()).toEqual([]);
    },
  );

  test('a broken compressed body without a valid key is a 401: it is never read', async () => {
    const res = await send(
      'POST',
      '/proxy',
      { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      Buffer.from('not gzip'),
    );
    expect(res.status).toBe(401);
  });

  test('a body in UTF-16 that decodes to no text is an empty body (400), not an empty context', async () => {
    for (const path of ['/proxy', '/api/frontend']) {
      const res = await send(
        'POST',
        path,
        { authorization: CLIENT_KEY, 'content-type': 'application/json; charset=utf-16' },
        Buffer.from([0x7b]),
      );
      expect(res.status).toBe(400);
      expect(JSON.parse(res.text)).toMatchObject({
        name: 'ValidationError',
        message: expect.stringMatching(/empty/),
      });
      // the same context in UTF-16, whole, is read
      const whole = await send(
        'POST',
        path,
        { authorization: CLIENT_KEY, 'content-type': 'application/json; charset=utf-16le' },
        Buffer.from('{"context":{"userId":"7"}}', 'utf16le'),
      );
      expect(whole.status).toBe(200);
    }
    expect(loud()).toEqual([]);
  });

  test('a query value with a bad escape is taken literally, like URLSearchParams, on every GET path', async () => {
    for (const path of ['/proxy', '/api/frontend']) {
      const bad = await request(app)
        .get(`${path}?userId=%ZZ&properties[plan]=%E0%A4%A`)
        .set('Authorization', CLIENT_KEY);
      expect(bad.status).toBe(200);
      // the same context as the properly escaped value: the same answer and validator
      const escaped = await request(app)
        .get(`${path}?userId=%25ZZ&properties[plan]=%E0%A4%A`)
        .set('Authorization', CLIENT_KEY);
      expect(escaped.headers.etag).toBe(bad.headers.etag);
    }
    const alice = await request(app).get('/proxy?userId=ali%63e&x=%ZZ').set('Authorization', CLIENT_KEY);
    expect(alice.body.toggles.map((t: { name: string }) => t.name)).toContain('for-alice');
    expect(loud()).toEqual([]);
  });
});

describe('names with a lone surrogate (not UTF-16 text) are refused where they enter', () => {
  const LONE = '\ud800'; // half of a surrogate pair: no character, cannot be encoded as UTF-8
  const now = new Date().toISOString();
  const bucket = (toggles: Record<string, unknown>) => ({ start: now, stop: now, toggles });
  const post = (path: string, body: unknown, key = CLIENT_KEY) =>
    send(
      'POST',
      path,
      { 'content-type': 'application/json', authorization: key },
      Buffer.from(JSON.stringify(body)),
    );

  test('usage, registrations and bulk usage: 400 naming the field, nothing kept, no error line', async () => {
    const refused: Array<[string, unknown, string?]> = [
      ['/proxy/client/metrics', { appName: `web${LONE}`, bucket: bucket({ a: { yes: 1, no: 0 } }) }],
      ['/proxy/client/metrics', { appName: 'web', instanceId: LONE, bucket: bucket({}) }],
      ['/proxy/client/metrics', { appName: 'web', bucket: bucket({ [`t${LONE}`]: { yes: 1, no: 0 } }) }],
      [
        '/proxy/client/metrics',
        { appName: 'web', bucket: bucket({ t: { yes: 1, no: 0, variants: { [LONE]: 1 } } }) },
      ],
      ['/proxy/client/register', { appName: `\udc00web`, instanceId: 'i1' }],
      ['/proxy/client/register', { appName: 'web', instanceId: 'i1', strategies: [`x${LONE}`] }],
      [
        '/api/client/metrics/bulk',
        { metrics: [{ featureName: 'f', appName: `app${LONE}`, timestamp: now, yes: 1, no: 0 }] },
        upstream.token,
      ],
      [
        '/api/client/metrics/bulk',
        { metrics: [{ featureName: `f${LONE}`, appName: 'app', timestamp: now, yes: 1, no: 0 }] },
        upstream.token,
      ],
      ['/api/client/metrics/bulk', { applications: [{ appName: LONE, instanceId: 'i' }] }, upstream.token],
    ];
    for (const [path, body, key] of refused) {
      const res = await post(path, body, key);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(JSON.parse(res.text)).toMatchObject({
        name: 'ValidationError',
        message: expect.stringContaining('must be text (a lone surrogate is not)'),
      });
    }
    // nothing of them was kept: the next forward carries no such name
    await app.clientUsage.forwarder.flush();
    const forwarded = [...upstream.posted('/api/client/metrics'), ...upstream.posted('/api/client/register')];
    expect(JSON.stringify(forwarded)).not.toMatch(/\\ud[89a-f]/);
    expect(loud()).toEqual([]);
  });

  test('a whole surrogate pair (an emoji) is a name like any other', async () => {
    const res = await post('/proxy/client/metrics', {
      appName: 'web 🚀',
      bucket: bucket({ 'launch-🚀': { yes: 1, no: 0 } }),
    });
    expect(res.status).toBe(202);
  });
});

describe('error lines caused by requests are rate-limited', () => {
  test('two hundred failing requests write a bounded number of error lines', async () => {
    const failing = await readyProxyFor(upstream, {
      logger,
      expCustomEnrichers: [
        () => {
          throw new Error('enricher broke');
        },
      ],
    });
    try {
      const agent = request.agent(failing);
      for (let i = 0; i < 200; i++) {
        const res = await agent.get('/proxy').set('Authorization', CLIENT_KEY);
        expect(res.status).toBe(500);
      }
      const errors = logger.lines.filter((l) => l.level === 'error');
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.length).toBeLessThanOrEqual(20);
    } finally {
      await failing.close();
    }
  });
});
