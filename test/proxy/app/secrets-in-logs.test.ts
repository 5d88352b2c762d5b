import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { childPort } from '../../support/listen';

// The built program, run as a user runs it; everything it writes is captured.
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const REDIS = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** One secret for every place the proxy knows one. */
interface Secrets {
  upstreamPassword: string;
  upstreamToken: string;
  clientKey: string;
  deprecatedKey: string;
  serverToken: string;
  bootstrapPassword: string;
  bootstrapAuthorization: string;
  proxyPassword: string;
  redisPassword: string;
}

// 1 to 3 characters, chosen so that none is a word of the log text by itself.
const SHORT: Secrets = {
  upstreamPassword: 'Q',
  upstreamToken: 'Zq',
  clientKey: 'k9x',
  deprecatedKey: 'j8',
  serverToken: 's7',
  bootstrapPassword: 'W',
  bootstrapAuthorization: 'bA',
  proxyPassword: 'V',
  redisPassword: 'R4',
};

const LONG: Secrets = {
  upstreamPassword: 'upstream-pass-4f9a1c',
  upstreamToken: '*:development.token-secret-77d2e0',
  clientKey: 'client-key-secret-b81f',
  deprecatedKey: 'deprecated-key-secret-29c4',
  serverToken: 'server-token-secret-0e6d',
  bootstrapPassword: 'bootstrap-pass-6a3b',
  bootstrapAuthorization: 'bootstrap-auth-secret-5c1d',
  proxyPassword: 'proxy-pass-secret-91e7',
  redisPassword: 'redis-pass-secret-3d8f',
};

function withUserinfo(url: string, user: string, password: string): string {
  const parsed = new URL(url);
  parsed.username = user;
  parsed.password = password;
  return parsed.toString();
}

/** Whether `secret` shows in the output: anywhere for long ones, as a whole word for short ones. */
function leaks(output: string, secret: string): boolean {
  if (secret.length > 3) return output.includes(secret) || output.includes(encodeURIComponent(secret));
  return output.split(/[^A-Za-z0-9]+/).includes(secret);
}

type Fault =
  'upstream 401, bootstrap refused, Redis unreachable' | 'proxy unreachable, Redis refusing the password';

async function runProxy(
  upstream: TestUpstream,
  secrets: Secrets,
  fault: Fault,
  level: 'debug' | 'default',
): Promise<string> {
  const viaProxy = fault.startsWith('proxy');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    FLAGS_URL: withUserinfo(upstream.url, 'proxyuser', secrets.upstreamPassword),
    FLAGS_API_TOKEN: secrets.upstreamToken,
    FLAGS_PROXY_CLIENT_KEYS: `public-key-1,${secrets.clientKey}`,
    FLAGS_PROXY_SECRETS: secrets.deprecatedKey,
    EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: secrets.serverToken,
    EXP_BOOTSTRAP_URL: withUserinfo('http://127.0.0.1:1/bootstrap.json', 'boot', secrets.bootstrapPassword),
    EXP_BOOTSTRAP_AUTHORIZATION: secrets.bootstrapAuthorization,
    FLAGS_REDIS_URL: viaProxy
      ? withUserinfo(REDIS, 'nobody', secrets.redisPassword)
      : withUserinfo('redis://127.0.0.1:1', 'default', secrets.redisPassword),
    FLAGS_FETCH_INTERVAL: '200',
    FLAGS_METRICS_INTERVAL: '0',
    PORT: '0',
    ...(viaProxy ? { HTTP_PROXY: withUserinfo('http://127.0.0.1:1', 'px', secrets.proxyPassword) } : {}),
    ...(level === 'debug' ? { LOG_LEVEL: 'debug' } : {}),
  };
  const child = spawn(process.execPath, [BIN], { env, stdio: 'pipe' });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    const port = await childPort(child, () => output);
    const expected = viaProxy
      ? ['upstream: ', 'unable to load bootstrap', 'Redis backup unavailable']
      : ['rejected the API token', 'unable to load bootstrap', 'Redis backup unavailable'];
    await waitFor(() => expected.every((text) => output.includes(text)), 20_000);
    // Requests carrying the keys: refused or not ready, they must not bring a key into a line.
    for (const key of [secrets.clientKey, secrets.serverToken, 'wrong-key']) {
      await fetch(`http://127.0.0.1:${port}/proxy`, { headers: { Authorization: key } }).catch(
        () => undefined,
      );
    }
    child.kill('SIGTERM');
    await exited;
    return output;
  } finally {
    child.kill('SIGKILL');
  }
}

describe('no secret reaches the output of the running proxy', () => {
  let upstream: TestUpstream;

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
    // Its token is none of the configured ones: every fetch is answered 401.
    upstream = await new TestUpstream(sampleFeatures(), 'the-real-token').start();
  });
  afterAll(() => upstream.stop());

  const cases: Array<[string, Fault, 'debug' | 'default', Secrets]> = [];
  for (const [length, secrets] of [
    ['1 to 3 character', SHORT],
    ['long', LONG],
  ] as const) {
    for (const fault of [
      'upstream 401, bootstrap refused, Redis unreachable',
      'proxy unreachable, Redis refusing the password',
    ] as const) {
      for (const level of ['debug', 'default'] as const) cases.push([length, fault, level, secrets]);
    }
  }

  it.each(cases)(
    'with %s secrets, on %s, at the %s log level',
    async (_length, fault, level, secrets) => {
      const output = await runProxy(upstream, secrets, fault, level);
      if (level === 'debug') expect(output).toContain('effective configuration');
      const found = Object.entries(secrets)
        .filter(([, secret]) => leaks(output, secret))
        .map(([place]) => place);
      expect({ found, output }).toEqual({ found: [], output });
    },
    60_000,
  );
});
