import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// README "Context": a parameter given twice is a 400 naming it; so is a field that is not data
// (`__proto__`, `constructor`) and a query past the parameter limit; an empty JSON body is a 400.
// The same on every entry: the front listener's raw GET path (no enrichers), Express (with `trustProxy`
// every GET goes through it), the frontend API and OFREP.

let upstream: TestUpstream;
let fast: ProxyApp;
let viaExpress: ProxyApp;

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  fast = await readyProxyFor(upstream);
  viaExpress = await readyProxyFor(upstream, { trustProxy: true });
});

afterAll(async () => {
  await Promise.all([fast.close(), viaExpress.close()]);
  await upstream.stop();
});

const GET_PATHS = ['/proxy', '/proxy/all', '/api/frontend', '/api/frontend/features/always-on'];
const POST_PATHS = ['/proxy', '/api/frontend', '/api/frontend/features/always-on'];

async function expect400(res: request.Response, fragment: string, where: string): Promise<void> {
  expect({ where, status: res.status }).toEqual({ where, status: 400 });
  const text = JSON.stringify(res.body);
  expect({ where, mentions: text.includes(fragment) }).toEqual({ where, mentions: true });
}

describe('a parameter given twice', () => {
  test.each([
    ['plan=pro&properties[plan]=free', 'plan'],
    ['properties[plan]=free&plan=pro', 'plan'],
    ['userId=a&userId=b', 'userId'],
    ['plan=&plan=pro', 'plan'],
  ])('%s is a 400 naming it on every GET entry', async (query, name) => {
    for (const app of [fast, viaExpress]) {
      for (const path of GET_PATHS) {
        const res = await request(app).get(`${path}?${query}`).set('Authorization', CLIENT_KEY);
        await expect400(res, `\\"${name}`, `${path}?${query}`);
        expect(res.body.name).toBe('ValidationError');
      }
    }
  });

  test('a root field and the property of the same name are two fields', async () => {
    const res = await request(fast)
      .get('/proxy?userId=alice&properties[userId]=bob')
      .set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
  });

  test('a POST context naming a property at its root and in properties is a 400 naming it', async () => {
    for (const path of POST_PATHS) {
      const res = await request(fast)
        .post(path)
        .set('Authorization', CLIENT_KEY)
        .send({ context: { plan: 'pro', properties: { plan: 'free' } } });
      await expect400(res, 'context.plan', path);
    }
  });
});

describe('the parameter limit', () => {
  const query = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=v`).join('&');

  test('a query past the limit is a 400 naming the limit, not parameters dropped silently', async () => {
    for (const app of [fast, viaExpress]) {
      for (const path of GET_PATHS) {
        const res = await request(app)
          .get(`${path}?${query(1001)}`)
          .set('Authorization', CLIENT_KEY);
        await expect400(res, 'FLAGS_MAX_CONTEXT_PROPERTIES', path);
      }
    }
  });

  test('the limit is the property limit plus the root fields and remoteAddress', async () => {
    const app = await readyProxyFor(upstream, { maxContextProperties: 3 });
    try {
      const root =
        'appName=a&environment=e&userId=u&sessionId=s&currentTime=2026-01-01T00:00:00Z&remoteAddress=x';
      const ok = await request(app).get(`/proxy?${root}&a=1&b=2&c=3`).set('Authorization', CLIENT_KEY);
      expect(ok.status).toBe(200);
      const over = await request(app).get(`/proxy?${root}&a=1&b=2&c=3&d=4`).set('Authorization', CLIENT_KEY);
      await expect400(over, 'more than 9 parameters', 'over');
    } finally {
      await app.close();
    }
  });
});

describe('an empty JSON body', () => {
  /** A raw POST: with `length` undefined the request has neither Content-Length nor a chunked body. */
  function post(
    app: ProxyApp,
    path: string,
    length: string | undefined,
  ): Promise<{ status: number; body: string }> {
    const server = http.createServer(app);
    return new Promise((resolve, reject) => {
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        const headers: Record<string, string> = {
          authorization: CLIENT_KEY,
          'content-type': 'application/json',
        };
        if (length !== undefined) headers['content-length'] = length;
        const req = http.request(
          { host: '127.0.0.1', port, path, method: 'POST', headers, agent: false },
          (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => server.close(() => resolve({ status: res.statusCode ?? 0, body })));
          },
        );
        req.on('error', reject);
        req.end();
      });
    });
  }

  test.each([
    ['without Content-Length', undefined],
    ['with Content-Length: 0', '0'],
  ])('is a 400 saying the body is empty (%s)', async (_what, length) => {
    for (const path of [...POST_PATHS, '/ofrep/v1/evaluate/flags', '/ofrep/v1/evaluate/flags/always-on']) {
      const res = await post(fast, path, length);
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
      expect(res.body).toContain('Request body is empty');
      expect(res.body).not.toContain('Content-Type must be');
    }
  });
});

describe('a field that is not data', () => {
  test.each([
    'properties[__proto__]=x',
    '__proto__=x',
    'constructor=x',
    'properties[constructor]=x',
    'properties%5B__proto__%5D=x',
  ])('GET ?%s is a 400 naming the field', async (query) => {
    for (const app of [fast, viaExpress]) {
      for (const path of GET_PATHS) {
        const res = await request(app).get(`${path}?${query}`).set('Authorization', CLIENT_KEY);
        await expect400(res, 'cannot be the name of a context field', `${path}?${query}`);
      }
    }
  });

  test.each([
    ['{"context":{"properties":{"__proto__":{"plan":"pro"}}}}', 'context.properties.__proto__'],
    ['{"context":{"properties":{"__proto__":"x"}}}', 'context.properties.__proto__'],
    ['{"context":{"__proto__":{"userId":"alice"}}}', 'context.__proto__'],
    ['{"context":{"constructor":"x"}}', 'context.constructor'],
    ['{"context":{"properties":{"constructor":"x"}}}', 'context.properties.constructor'],
  ])('POST %s is a 400 naming %s', async (body, field) => {
    for (const path of POST_PATHS) {
      const res = await request(fast)
        .post(path)
        .set('Authorization', CLIENT_KEY)
        .set('Content-Type', 'application/json')
        .send(body);
      await expect400(res, field, path);
      expect(res.body.name).toBe('ValidationError');
    }
    for (const path of ['/ofrep/v1/evaluate/flags', '/ofrep/v1/evaluate/flags/always-on']) {
      const res = await request(fast)
        .post(path)
        .set('Authorization', CLIENT_KEY)
        .set('Content-Type', 'application/json')
        .send(body);
      await expect400(res, field, path);
      expect(res.body.errorCode).toBe('INVALID_CONTEXT');
    }
  });
});
