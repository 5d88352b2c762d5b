/**
 * Unleash Edge's contract in its own words: its logging variables (`RUST_LOG`, `LOG_FORMAT`), its
 * defaults under its names, and start-up problems that name the variable the operator set and what
 * a good value looks like, never the specification's counterpart.
 */
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import { silentLogger } from '../../../src/common/logging/logger';
import { levelFromRustLog } from '../../../src/proxy/config/edge-logging';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { configProblems } from '../../support/config-problems';
import { sampleFeatures } from '../../support/fixtures';
import { capturingLogger } from '../../support/logger';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const EDGE = { UPSTREAM_URL: 'http://unleash:4242', TOKENS: '*:development.edge-secret-0123' };
const SPEC = {
  FLAGS_URL: 'http://unleash:4242/api',
  FLAGS_API_TOKEN: '*:development.spec-secret-0123',
  FLAGS_PROXY_CLIENT_KEYS: 'web-key',
};
const parse = (env: Record<string, string>, options = {}) =>
  parseConfig({ logger: silentLogger, ...options }, env);
const problems = (env: Record<string, string>, options = {}) => configProblems(() => parse(env, options));

describe('RUST_LOG', () => {
  test.each([
    ['warn', 'warn'],
    ['INFO', 'info'],
    ['trace', 'debug'],
    ['error', 'error'],
    ['off', 'fatal'],
    ['unleash_edge=debug,actix_web=warn', 'debug'],
    ['actix_web=warn,info', 'info'],
    ['info,unleash_edge=error', 'error'],
    ['unleash_edge::http=debug,warn', 'debug'],
    ['unleash_edge', 'debug'],
  ])('%s sets the level %s', (value, level) => {
    expect(parse({ ...EDGE, RUST_LOG: value }).logLevel).toBe(level);
  });

  test('directives for other targets only leave our default', () => {
    expect(levelFromRustLog('actix_web=warn,hyper=info')).toEqual({ ok: true, value: undefined });
    expect(parse({ ...EDGE, RUST_LOG: 'hyper=info' }).logLevel).toBe('warn');
  });

  test('LOG_LEVEL wins when both are set', () => {
    expect(parse({ ...EDGE, RUST_LOG: 'debug', LOG_LEVEL: 'error' }).logLevel).toBe('error');
  });

  test.each(['loud', 'warning', 'unleash_edge=verbose', 'unleash_edge[span{x=1}]=debug', '=debug'])(
    'nonsense (%s) stops start-up with one line naming RUST_LOG and the expected form',
    (value) => {
      const lines = problems({ ...EDGE, RUST_LOG: value });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^Invalid RUST_LOG=".*": .*expected a level \(error, warn, info, debug, trace, off\)/,
      );
      expect(lines[0]).toContain('unleash_edge=debug,actix_web=warn');
    },
  );
});

describe('LOG_FORMAT', () => {
  test('json writes JSON lines; plain and pretty human ones; JSON_LOGGER wins', () => {
    expect(parse({ ...EDGE, LOG_FORMAT: 'json' }).useJsonLogger).toBe(true);
    expect(parse({ ...EDGE, LOG_FORMAT: 'plain' }).useJsonLogger).toBe(false);
    expect(parse({ ...EDGE, LOG_FORMAT: 'pretty' }).useJsonLogger).toBe(false);
    expect(parse({ ...EDGE, LOG_FORMAT: 'json', JSON_LOGGER: 'false' }).useJsonLogger).toBe(false);
    expect(parse({ ...EDGE, LOG_FORMAT: 'plain', JSON_LOGGER: 'true' }).useJsonLogger).toBe(true);
  });

  test('another value stops start-up naming LOG_FORMAT', () => {
    expect(problems({ ...EDGE, LOG_FORMAT: 'xml' })).toEqual([
      'Invalid LOG_FORMAT="xml": expected json, plain or pretty',
    ]);
  });

  test('is no longer warned about as unsupported', () => {
    const logger = capturingLogger();
    parseConfig({ logger }, { ...EDGE, LOG_FORMAT: 'json' });
    expect(logger.lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});

describe("Edge's defaults under Edge's names", () => {
  test('15 s polls, 60 s usage reports, 3600 s revalidation', () => {
    const config = parse(EDGE);
    expect([config.refreshInterval, config.metricsInterval, config.tokenRevalidateInterval]).toEqual([
      15_000, 60_000, 3_600_000,
    ]);
  });

  test("the specification's defaults under its names, and Edge's seconds variables read there too", () => {
    const config = parse(SPEC);
    expect([config.refreshInterval, config.metricsInterval]).toEqual([5000, 30_000]);
    const edgeSeconds = parse({ ...SPEC, FEATURES_REFRESH_INTERVAL_SECONDS: '7' });
    expect(edgeSeconds.refreshInterval).toBe(7000);
  });

  test('a variable set wins over the default, and our milliseconds over Edge’s seconds', () => {
    expect(parse({ ...EDGE, FEATURES_REFRESH_INTERVAL_SECONDS: '30' }).refreshInterval).toBe(30_000);
    expect(parse({ ...EDGE, METRICS_INTERVAL_SECONDS: '5' }).metricsInterval).toBe(5000);
    expect(
      parse({ ...EDGE, FEATURES_REFRESH_INTERVAL_SECONDS: '30', FLAGS_FETCH_INTERVAL: '1000' })
        .refreshInterval,
    ).toBe(1000);
  });

  test('offline mode, by option (`flags-proxy offline`) or by BOOTSTRAP_FILE, is one contract: 3063, /all on', () => {
    const offline = { FRONTEND_TOKENS: 'web-key', BOOTSTRAP_FILE: '/tmp/features.json' };
    for (const config of [parse(offline), parse(offline, { offline: true })]) {
      expect([config.contract, config.port, config.enableAllEndpoint]).toEqual(['edge', 3063, true]);
    }
  });

  test('`flags-proxy edge` chooses Edge’s contract whatever names are used', () => {
    const config = parse(
      { FLAGS_URL: 'http://u:4242/api', FLAGS_API_TOKEN: '*:development.x-0123' },
      { edgeContract: true },
    );
    expect([config.contract, config.port, config.enableAllEndpoint, config.clientKeys]).toEqual([
      'edge',
      3063,
      true,
      [],
    ]);
  });
});

describe("start-up problems in Edge's words", () => {
  const noSpecNames = (lines: string[]) => {
    for (const line of lines) expect(line).not.toMatch(/FLAGS_|clientKeys|flagsApiToken|flagsUrl/);
  };

  test('UPSTREAM_URL without TOKENS: one line naming TOKENS and the form of a token', () => {
    const lines = problems({ UPSTREAM_URL: EDGE.UPSTREAM_URL });
    expect(lines).toEqual([
      'TOKENS is missing: the client tokens definitions are read with, comma-separated, each `<project>:<environment>.<secret>` (e.g. `*:production.a1b2c3`)',
    ]);
  });

  test.each([
    ['quoted by YAML', '"*:development.abc123"', /^TOKENS is quoted: give the tokens without quotes/],
    [
      'space-separated',
      '*:development.abc *:production.def',
      /^TOKENS holds a space: separate tokens with commas/,
    ],
    [
      'without a secret',
      '*:development',
      /^TOKENS has no secret after its environment: each token is `<project>:<environment>.<secret>`/,
    ],
    ['a second entry without a secret', '*:development.abc,*:production', /^entry 2 of TOKENS has no secret/],
    ['malformed', 'a b:c:development.x', /^TOKENS holds a space/],
  ])('TOKENS %s: one line naming it, the value unshown', (_what, value, expected) => {
    const lines = problems({ UPSTREAM_URL: EDGE.UPSTREAM_URL, TOKENS: value });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(expected);
    expect(lines[0]).not.toContain('abc');
    noSpecNames(lines);
  });

  test('an empty TOKENS list is named as TOKENS', () => {
    expect(problems({ UPSTREAM_URL: EDGE.UPSTREAM_URL, TOKENS: ' , ' })).toEqual([
      'TOKENS holds no token: give comma-separated tokens, each `<project>:<environment>.<secret>`',
    ]);
  });

  test('TOKENS without UPSTREAM_URL under `flags-proxy edge`: UPSTREAM_URL named, with its form', () => {
    const lines = problems({ TOKENS: EDGE.TOKENS }, { edgeContract: true });
    expect(lines).toEqual([
      'UPSTREAM_URL is missing: the Unleash server to read flags from, its base URL without /api (e.g. http://unleash:4242)',
    ]);
  });

  test('a malformed UPSTREAM_URL is named without its counterpart in the other contract', () => {
    const lines = problems({ ...EDGE, UPSTREAM_URL: 'unleash:4242' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^Invalid UPSTREAM_URL="unleash:4242": /);
    noSpecNames(lines);
  });

  test('a pretrusted token naming an environment no TOKENS entry holds names PRETRUSTED_TOKENS and TOKENS', () => {
    expect(() =>
      createApp(
        { logger: silentLogger, metricsInterval: 0 },
        { ...EDGE, PRETRUSTED_TOKENS: 'key@production' },
      ),
    ).toThrow(
      /A key of PRETRUSTED_TOKENS of the form secret@environment names an environment no upstream token in TOKENS holds/,
    );
  });

  test('a pretrusted token that is also a server-side SDK token is named as PRETRUSTED_TOKENS', () => {
    const lines = problems({
      ...EDGE,
      PRETRUSTED_TOKENS: 'shared-key@development',
      EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'shared-key@development',
    });
    expect(lines).toEqual([
      'A value of PRETRUSTED_TOKENS is also a server-side SDK token in EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: client keys are public, so that token would let any web page read every flag definition; use different values',
    ]);
  });

  test("the specification's words under its names are unchanged", () => {
    expect(problems({ FLAGS_URL: SPEC.FLAGS_URL, FLAGS_API_TOKEN: SPEC.FLAGS_API_TOKEN })).toEqual([
      'Missing required configuration: clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)',
    ]);
  });
});

describe('a token the upstream refuses', () => {
  let upstream: TestUpstream | undefined;
  let app: ProxyApp | undefined;
  afterEach(async () => {
    await app?.close();
    await upstream?.stop();
  });

  test("is logged naming TOKENS under Edge's names, FLAGS_API_TOKEN under the specification's", async () => {
    upstream = await new TestUpstream(sampleFeatures(), '*:development.the-real-token').start();
    for (const [env, name] of [
      [{ UPSTREAM_URL: upstream.url, TOKENS: '*:development.wrong-0123' }, 'TOKENS'],
      [{ ...SPEC, FLAGS_URL: upstream.url, FLAGS_API_TOKEN: '*:development.wrong-0123' }, 'FLAGS_API_TOKEN'],
    ] as const) {
      const logger = capturingLogger();
      app = createApp({ logger, metricsInterval: 0 }, env);
      await waitFor(() => logger.lines.some((l) => l.level === 'error'));
      const error = logger.lines.find((l) => l.level === 'error')?.msg ?? '';
      expect(error).toContain(`(HTTP 401); check ${name}.`);
      expect(error).not.toContain(name === 'TOKENS' ? 'FLAGS_API_TOKEN' : 'check TOKENS');
      await app.close();
      app = undefined;
    }
  });
});
