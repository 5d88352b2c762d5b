import request from 'supertest';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import type { Logger } from '../../../src/common/logging/logger';
import { REDACTED, redactConfig } from '../../../src/common/logging/redact';
import { PROXY_OPTIONS } from '../../../src/proxy/config/options';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const UPSTREAM_TOKEN = 'default:development.upstream-token-s3cr3t';
const CLIENT_KEYS = ['client-key-alpha-s3cr3t', 'client-key-beta-s3cr3t'];
const SERVER_TOKEN = 'server-sdk-token-s3cr3t';
const BOOTSTRAP_AUTH = 'bootstrap-auth-s3cr3t';
const PROXY_PASSWORD = 'proxy-password-s3cr3t';

/** Captures what the default logger writes to stdout. */
function captureStdout(): { text(): string; lines(): string[]; restore(): void } {
  const chunks: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  return {
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== ''),
    restore: () => spy.mockRestore(),
  };
}

describe('logging', () => {
  let upstream: TestUpstream;
  const apps: ProxyApp[] = [];
  const track = (app: ProxyApp) => (apps.push(app), app);
  let capture: ReturnType<typeof captureStdout> | undefined;

  beforeEach(async () => {
    upstream = await new TestUpstream(sampleFeatures(), UPSTREAM_TOKEN).start();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    capture?.restore();
    capture = undefined;
    await upstream.stop();
  });

  const required = () => ({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: UPSTREAM_TOKEN,
    FLAGS_PROXY_CLIENT_KEYS: CLIENT_KEYS.join(','),
  });

  it('the default logger writes simple human-readable lines', async () => {
    capture = captureStdout();
    await track(createApp({ metricsInterval: 0 }, { ...required(), LOG_LEVEL: 'debug' })).whenReady();
    const dump = capture.lines().find((l) => l.includes('effective configuration'));
    expect(dump).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z DEBUG flags-proxy: effective configuration \{/,
    );
    expect(() => JSON.parse(dump ?? '')).toThrow();
  });

  it('JSON_LOGGER writes every line as one-line JSON', async () => {
    capture = captureStdout();
    const app = track(
      createApp({ metricsInterval: 0 }, { ...required(), LOG_LEVEL: 'debug', JSON_LOGGER: 'true' }),
    );
    await app.whenReady();
    const lines = capture.lines();
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    const dump = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'effective configuration');
    expect(dump).toMatchObject({ level: 20, name: 'flags-proxy', config: { flagsUrl: upstream.url } });
  });

  it('LOG_LEVEL=warn drops debug lines and keeps warnings', async () => {
    capture = captureStdout();
    track(
      createApp(
        { metricsInterval: 0 },
        {
          FLAGS_URL: upstream.url,
          FLAGS_API_TOKEN: UPSTREAM_TOKEN,
          FLAGS_PROXY_SECRETS: 'k1',
          LOG_LEVEL: 'warn',
        },
      ),
    );
    const text = capture.text();
    expect(text).toContain(' WARN flags-proxy: proxySecrets / FLAGS_PROXY_SECRETS is deprecated');
    expect(text).not.toContain(' DEBUG ');
    expect(text).not.toContain('effective configuration');
  });

  it('a custom logger in code receives the lines, and the default logger stays silent', async () => {
    capture = captureStdout();
    const received: Array<[string, string, Record<string, unknown> | undefined]> = [];
    const at =
      (level: string) =>
      (msg: string, fields?: Record<string, unknown>): void =>
        void received.push([level, msg, fields]);
    const logger: Logger = {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      fatal: at('fatal'),
    };
    await track(
      createApp({ logger, metricsInterval: 0 }, { ...required(), JSON_LOGGER: 'true' }),
    ).whenReady();
    expect(received.find(([, msg]) => msg === 'effective configuration')?.[0]).toBe('debug');
    expect(capture.text()).toBe('');
  });

  it('at debug level, a full request cycle with an upstream 401 logs neither the upstream token nor a client key', async () => {
    capture = captureStdout();
    const app = track(
      createApp(
        {
          metricsInterval: 0,
          refreshInterval: 100,
          proxySecrets: ['deprecated-secret-s3cr3t'],
          expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
          httpsProxy: `http://user:${PROXY_PASSWORD}@127.0.0.1:9`,
          expBootstrap: {
            url: `${upstream.url}/client/features`,
            urlHeaders: { Authorization: BOOTSTRAP_AUTH },
          },
          expCustomEnrichers: [
            (context, req) => {
              if (req.query.fail === 'yes')
                throw new Error(`enricher failed for ${String(req.headers.authorization)}`);
              return context;
            },
          ],
        },
        { ...required(), LOG_LEVEL: 'debug', JSON_LOGGER: 'true' },
      ),
    );
    await app.whenReady();
    await request(app).get('/proxy?userId=u1').set('authorization', CLIENT_KEYS[0]).expect(200);
    await request(app)
      .post('/proxy')
      .set('authorization', `Bearer ${CLIENT_KEYS[1]}`)
      .send({ context: {} })
      .expect(200);
    await request(app).get('/proxy').set('authorization', 'wrong-key-s3cr3t').expect(401);
    await request(app).get('/proxy?fail=yes').set('authorization', CLIENT_KEYS[0]).expect(500);
    await request(app).get('/proxy/client/features').set('authorization', SERVER_TOKEN);
    // The upstream now refuses the proxy's token.
    upstream.token = 'rotated-token';
    await waitFor(() => capture?.text().includes('rejected the API token') ?? false);

    const text = capture.text();
    expect(text).toContain('effective configuration');
    expect(text).toContain(REDACTED);
    // The enricher's exception named the client key; the line was logged with the key scrubbed.
    expect(text).toContain(`enricher failed for ${REDACTED}`);
    for (const secret of [
      UPSTREAM_TOKEN,
      ...CLIENT_KEYS,
      'wrong-key-s3cr3t',
      'deprecated-secret-s3cr3t',
      SERVER_TOKEN,
      BOOTSTRAP_AUTH,
      PROXY_PASSWORD,
    ]) {
      expect({ secret, found: text.includes(secret) }).toEqual({ secret, found: false });
    }
  });

  describe('the redacted configuration', () => {
    const config = () =>
      parseConfig(
        {
          flagsUrl: 'https://flags.example.com/api',
          flagsApiToken: UPSTREAM_TOKEN,
          clientKeys: CLIENT_KEYS,
          expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
          expBootstrap: {
            url: 'https://cdn.example.com/flags.json',
            urlHeaders: { Authorization: BOOTSTRAP_AUTH, 'X-Api-Key': 'other' },
          },
          httpProxy: `http://user:${PROXY_PASSWORD}@proxy.example.com:3128`,
          logger: { debug() {}, info() {}, warn() {}, error() {}, fatal() {} },
        },
        {},
      );

    it('replaces every option marked secret, keeping the number of list entries', () => {
      const redacted = redactConfig(config(), PROXY_OPTIONS, ['expBootstrap.urlHeaders']);
      expect(redacted.flagsApiToken).toBe(REDACTED);
      expect(redacted.clientKeys).toEqual([REDACTED, REDACTED]);
      expect(redacted.expServerSideSdkConfig).toEqual({ tokens: [REDACTED] });
      expect(redacted.expBootstrap).toEqual({
        url: 'https://cdn.example.com/flags.json',
        urlHeaders: { Authorization: REDACTED, 'X-Api-Key': REDACTED },
      });
      expect(redacted.httpProxy).toBe(`http://user:${encodeURIComponent(REDACTED)}@proxy.example.com:3128/`);
      expect(redacted.flagsUrl).toBe('https://flags.example.com/api');
    });

    it('every secret option of the table is covered', () => {
      const secretKeys = PROXY_OPTIONS.filter((o) => o.secret).map((o) => o.key);
      expect(secretKeys).toEqual(
        expect.arrayContaining([
          'flagsApiToken',
          'clientKeys',
          'proxySecrets',
          'expServerSideSdkConfig.tokens',
          'expBootstrap.urlHeaders.Authorization',
        ]),
      );
    });
  });
});
