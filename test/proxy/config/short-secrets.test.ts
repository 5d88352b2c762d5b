import type { Logger } from '../../../src/common/logging/logger';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { startBuiltProxy } from '../../support/built-proxy';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// A secret a client sends that is short enough to be found by trying keys is named at start: one
// `warn` line per variable, never the secret.

const LONG_UPSTREAM = '*:development.upstream-secret-0123456789abcdef';
const LONG_KEY = 'long-client-key-0123456789abcdef';

function warnings(env: Record<string, string>): string[] {
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (msg: string) => lines.push(msg),
    error: () => undefined,
    fatal: () => undefined,
  };
  parseConfig({ logger }, { FLAGS_URL: 'http://upstream:4242/api', ...env });
  return lines;
}

test('short client keys, upstream tokens and server-side SDK tokens are each named once, by the variable set, never the secret', () => {
  const lines = warnings({
    FLAGS_API_TOKEN: '*:development.abc',
    PRETRUSTED_TOKENS: `${LONG_KEY},*:development.xyz,qrs@development,also-long-key-0123456789`,
    EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'tiny',
  });
  expect(lines).toEqual([
    'PRETRUSTED_TOKENS holds 2 secrets shorter than 16 characters (entry 2, 3 of 4): a short secret can be found by trying keys; use at least 16 random characters',
    'EXP_SERVER_SIDE_SDK_CONFIG_TOKENS holds a secret shorter than 16 characters: a short secret can be found by trying keys; use at least 16 random characters',
    'FLAGS_API_TOKEN holds a secret shorter than 16 characters: a short secret can be found by trying keys; use at least 16 random characters',
  ]);
  for (const secret of ['abc', 'xyz', 'qrs', 'tiny']) expect(lines.join('\n')).not.toContain(secret);
});

test('the secret is what a guesser must find: an Unleash token’s part after the dot, a key’s part before @environment', () => {
  // 16 characters after the dot, and before @development: long enough, whatever the scope adds
  expect(
    warnings({
      FLAGS_API_TOKEN: LONG_UPSTREAM,
      FLAGS_PROXY_CLIENT_KEYS: '*:development.0123456789abcdef,0123456789abcdef@development',
    }),
  ).toEqual([]);
  // 15 characters: short, though the whole entry is long
  expect(
    warnings({
      FLAGS_API_TOKEN: LONG_UPSTREAM,
      FLAGS_PROXY_CLIENT_KEYS: 'a-very-long-project-name:development.0123456789abcde',
    }),
  ).toEqual([expect.stringMatching(/^FLAGS_PROXY_CLIENT_KEYS holds a secret shorter than 16 characters:/)]);
  expect(
    warnings({ FLAGS_API_TOKEN: LONG_UPSTREAM, FLAGS_PROXY_CLIENT_KEYS: '0123456789abcde@development' }),
  ).toHaveLength(1);
});

test('offline mode’s FRONTEND_TOKENS and CLIENT_TOKENS are named too', () => {
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (msg: string) => lines.push(msg),
    error: () => undefined,
    fatal: () => undefined,
  };
  parseConfig(
    { logger },
    {
      BOOTSTRAP_FILE: '/nonexistent/features.json',
      FRONTEND_TOKENS: 'short-front',
      CLIENT_TOKENS: LONG_UPSTREAM,
    },
  );
  expect(lines.filter((l) => l.includes('shorter than 16'))).toEqual([
    expect.stringMatching(/^FRONTEND_TOKENS holds a secret shorter than 16 characters:/),
  ]);
});

test('the built program says so at start, once, and serves', async () => {
  const upstream = await new TestUpstream({ version: 2, features: [] }, LONG_UPSTREAM).start();
  try {
    const proxy = await startBuiltProxy({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: LONG_UPSTREAM,
      FLAGS_PROXY_CLIENT_KEYS: `${LONG_KEY},k3y`,
    });
    try {
      await waitFor(
        async () => (await fetch(`${proxy.origin}/internal-backstage/ready`)).status === 200,
        15_000,
      );
      expect((await fetch(`${proxy.origin}/proxy`, { headers: { Authorization: 'k3y' } })).status).toBe(200);
      const output = proxy.output();
      const short = output.split('\n').filter((l) => l.includes('shorter than 16'));
      expect(short).toHaveLength(1);
      expect(short[0]).toContain(
        'FLAGS_PROXY_CLIENT_KEYS holds a secret shorter than 16 characters (entry 2 of 2)',
      );
      expect(output).not.toContain('k3y');
    } finally {
      await proxy.stop();
    }
  } finally {
    await upstream.stop();
  }
}, 60_000);
