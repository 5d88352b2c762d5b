import request from 'supertest';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import { silentLogger } from '../../../src/common/logging/logger';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// README "Limits": a context has at most 100 properties, values of at most 1,024 characters and
// 16,384 characters of names and values in all; over a limit is a 400 naming it, before any schema
// or evaluation sees the context.

let upstream: TestUpstream;
let app: ProxyApp;

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  app = await readyProxyFor(upstream);
});

afterAll(async () => {
  await app.close();
  await upstream.stop();
});

const properties = (n: number, valueLength = 1): Record<string, string> =>
  Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`p${String(i).padStart(3, '0')}`, 'v'.repeat(valueLength)]),
  );
const asQuery = (props: Record<string, string>) =>
  Object.entries(props)
    .map(([k, v]) => `properties[${k}]=${v}`)
    .join('&');

async function everyEntry(
  props: Record<string, string>,
): Promise<Array<{ where: string; status: number; text: string }>> {
  const answers = [];
  // A GET's request line and headers are bounded by Node's 16 KiB header limit (431) before the
  // context limits apply: the query is sent when it fits.
  if (asQuery(props).length < 8000) {
    const get = await request(app)
      .get(`/proxy?${asQuery(props)}`)
      .set('Authorization', CLIENT_KEY);
    answers.push({ where: 'GET /proxy', status: get.status, text: get.text });
  }
  for (const path of ['/proxy', '/api/frontend', '/ofrep/v1/evaluate/flags']) {
    const res = await request(app)
      .post(path)
      .set('Authorization', CLIENT_KEY)
      .send({ context: { properties: props } });
    answers.push({ where: `POST ${path}`, status: res.status, text: res.text });
  }
  return answers;
}

describe('context limits', () => {
  test('the largest context within every default limit is answered', async () => {
    // 100 properties, 16,384 characters of names and values in all
    const props = properties(100, 159);
    for (const answer of await everyEntry(props))
      expect({ where: answer.where, status: answer.status }).toEqual({ where: answer.where, status: 200 });
  });

  test.each([
    ['more than 100 properties', properties(101), 'more than 100 properties', 'FLAGS_MAX_CONTEXT_PROPERTIES'],
    [
      'a value longer than 1,024 characters',
      { plan: 'x'.repeat(1025) },
      'longer than 1024 characters',
      'FLAGS_MAX_CONTEXT_VALUE_LENGTH',
    ],
    [
      'more than 16,384 characters in all',
      properties(20, 1000),
      'larger than 16384 characters',
      'FLAGS_MAX_CONTEXT_SIZE',
    ],
  ])('%s is a 400 naming the limit on every entry', async (_what, props, message, variable) => {
    for (const answer of await everyEntry(props)) {
      expect({ where: answer.where, status: answer.status }).toEqual({ where: answer.where, status: 400 });
      expect(answer.text).toContain(message);
      expect(answer.text).toContain(variable);
      if (answer.where.includes('ofrep')) expect(JSON.parse(answer.text).errorCode).toBe('INVALID_CONTEXT');
      else expect(JSON.parse(answer.text).name).toBe('ValidationError');
    }
  });

  test('a root field counts against the value and total limits too', async () => {
    const res = await request(app)
      .get(`/proxy?userId=${'u'.repeat(1025)}`)
      .set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('Query parameter "userId" is longer than 1024 characters');
  });

  test('the limits are set by their variables', async () => {
    const limited = createApp(
      { logger: silentLogger, metricsInterval: 0 },
      {
        FLAGS_URL: upstream.url,
        FLAGS_API_TOKEN: upstream.token,
        FLAGS_PROXY_CLIENT_KEYS: CLIENT_KEY,
        FLAGS_MAX_CONTEXT_PROPERTIES: '2',
        FLAGS_MAX_CONTEXT_VALUE_LENGTH: '5',
        FLAGS_MAX_CONTEXT_SIZE: '12',
      },
    );
    try {
      await limited.whenReady();
      const get = (query: string) => request(limited).get(`/proxy?${query}`).set('Authorization', CLIENT_KEY);
      expect((await get('a=1&b=2')).status).toBe(200);
      expect((await get('a=1&b=2&c=3')).body.message).toContain('more than 2 properties');
      expect((await get('a=123456')).body.message).toContain('longer than 5 characters');
      expect((await get('userId=abcde&a=12345')).body.message).toContain('larger than 12 characters');
    } finally {
      await limited.close();
    }
  });
});
