import { silentLogger, type Logger } from '../../../src/common/logging/logger';
import { PROXY_OPTIONS } from '../../../src/proxy/config/options';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { configProblems } from '../../support/config-problems';

/** The environment a container of the reference Unleash proxy is started with. */
const REFERENCE_ENV = {
  UNLEASH_URL: 'http://upstream:4242/api',
  UNLEASH_API_TOKEN: 'reference-token',
  UNLEASH_PROXY_CLIENT_KEYS: 'ref-key-1,ref-key-2',
};

const OURS = {
  FLAGS_URL: 'http://ours:4242/api',
  FLAGS_API_TOKEN: 'our-token',
  FLAGS_PROXY_CLIENT_KEYS: 'our-key',
};

function recordingLogger(): { logger: Logger; lines: Array<{ level: string; msg: string }> } {
  const lines: Array<{ level: string; msg: string }> = [];
  const at =
    (level: string) =>
    (msg: string): void => {
      lines.push({ level, msg });
    };
  return {
    lines,
    logger: {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      fatal: at('fatal'),
    },
  };
}

describe("the reference Unleash proxy's names", () => {
  test.each([
    ['UNLEASH_URL', 'http://other:1/api', 'flagsUrl', 'http://other:1/api'],
    ['UNLEASH_API_TOKEN', 'other-token', 'flagsApiToken', 'other-token'],
    ['UNLEASH_PROXY_CLIENT_KEYS', 'a, b', 'clientKeys', ['a', 'b']],
    ['UNLEASH_APP_NAME', 'reference-app', 'flagsAppName', 'reference-app'],
    ['UNLEASH_INSTANCE_ID', 'instance-7', 'flagsInstanceId', 'instance-7'],
    ['UNLEASH_FETCH_INTERVAL', '1500', 'refreshInterval', 1500],
    ['UNLEASH_METRICS_INTERVAL', '45000', 'metricsInterval', 45000],
    ['UNLEASH_METRICS_JITTER', '250', 'metricsJitter', 250],
    ['UNLEASH_ENVIRONMENT', 'production', 'environment', 'production'],
    ['UNLEASH_PROJECT_NAME', 'shop', 'projectName', 'shop'],
    ['UNLEASH_NAME_PREFIX', 'web.', 'namePrefix', 'web.'],
    ['UNLEASH_TAGS', 'team:web', 'tags', [{ name: 'team', value: 'web' }]],
  ])('%s is read as an alias of its FLAGS_* twin', (variable, raw, key, expected) => {
    const config = parseConfig({ logger: silentLogger }, { ...REFERENCE_ENV, [variable]: raw });
    expect((config as unknown as Record<string, unknown>)[key]).toEqual(expected);
  });

  test('UNLEASH_CUSTOM_STRATEGIES_FILE is read as an alias of FLAGS_CUSTOM_STRATEGIES_FILE', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...REFERENCE_ENV, UNLEASH_CUSTOM_STRATEGIES_FILE: '/opt/strategies/a.js,/opt/strategies/b.js' },
    );
    expect(config.customStrategies).toEqual(['/opt/strategies/a.js', '/opt/strategies/b.js']);
  });

  test('every variable of the reference proxy that DESIGN.md lists is declared as an alias', () => {
    const aliases = new Map(
      PROXY_OPTIONS.flatMap((spec) =>
        (spec.aliases?.env ?? [])
          .filter((a) => a.startsWith('UNLEASH_'))
          .map((alias) => [alias, spec.env[0]]),
      ),
    );
    expect(Object.fromEntries(aliases)).toEqual({
      UNLEASH_URL: 'FLAGS_URL',
      UNLEASH_API_TOKEN: 'FLAGS_API_TOKEN',
      UNLEASH_PROXY_CLIENT_KEYS: 'FLAGS_PROXY_CLIENT_KEYS',
      UNLEASH_PROXY_SECRETS: 'FLAGS_PROXY_SECRETS',
      UNLEASH_APP_NAME: 'FLAGS_APP_NAME',
      UNLEASH_INSTANCE_ID: 'FLAGS_INSTANCE_ID',
      UNLEASH_FETCH_INTERVAL: 'FLAGS_FETCH_INTERVAL',
      UNLEASH_METRICS_INTERVAL: 'FLAGS_METRICS_INTERVAL',
      UNLEASH_METRICS_JITTER: 'FLAGS_METRICS_JITTER',
      UNLEASH_ENVIRONMENT: 'FLAGS_ENVIRONMENT',
      UNLEASH_PROJECT_NAME: 'FLAGS_PROJECT_NAME',
      UNLEASH_CUSTOM_STRATEGIES_FILE: 'FLAGS_CUSTOM_STRATEGIES_FILE',
      UNLEASH_NAME_PREFIX: 'FLAGS_NAME_PREFIX',
      UNLEASH_TAGS: 'FLAGS_TAGS',
    });
  });

  test('a FLAGS_* variable wins over its alias when both are set', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...REFERENCE_ENV, ...OURS, FLAGS_FETCH_INTERVAL: '700', UNLEASH_FETCH_INTERVAL: '900' },
    );
    expect(config.flagsUrl).toBe('http://ours:4242/api');
    expect(config.flagsApiToken).toBe('our-token');
    expect(config.clientKeys).toEqual(['our-key']);
    expect(config.refreshInterval).toBe(700);
  });

  test('the code options unleashUrl, unleashApiToken, unleashAppName, unleashInstanceId are aliases', () => {
    const options: ProxyOptions = {
      logger: silentLogger,
      unleashUrl: 'http://code:1/api',
      unleashApiToken: 'code-token',
      unleashAppName: 'code-app',
      unleashInstanceId: 'code-instance',
      clientKeys: ['k'],
    };
    const config = parseConfig(options, {});
    expect(config).toMatchObject({
      flagsUrl: 'http://code:1/api',
      flagsApiToken: 'code-token',
      flagsAppName: 'code-app',
      flagsInstanceId: 'code-instance',
    });
  });

  test('our code name wins over its code alias', () => {
    const config = parseConfig(
      { logger: silentLogger, flagsUrl: 'http://ours:1/api', unleashUrl: 'http://alias:1/api' },
      { ...OURS },
    );
    expect(config.flagsUrl).toBe('http://ours:1/api');
  });

  test('a code alias wins over every variable, ours included', () => {
    const config = parseConfig(
      { logger: silentLogger, unleashAppName: 'from-code-alias' },
      { ...OURS, FLAGS_APP_NAME: 'from-env', UNLEASH_APP_NAME: 'from-env-alias' },
    );
    expect(config.flagsAppName).toBe('from-code-alias');
  });

  test('UNLEASH_PROXY_SECRETS is the deprecated secrets twin: used only without client keys, with a warning', () => {
    const { logger, lines } = recordingLogger();
    const { UNLEASH_PROXY_CLIENT_KEYS: _unused, ...withoutKeys } = REFERENCE_ENV;
    const config = parseConfig({ logger }, { ...withoutKeys, UNLEASH_PROXY_SECRETS: 'old-secret' });
    expect(config.clientKeys).toEqual(['old-secret']);
    // (the short secrets of this configuration are named too: test/proxy/config/short-secrets.test.ts)
    const warnings = lines
      .filter((l) => l.level === 'warn' && !l.msg.includes('shorter than'))
      .map((l) => l.msg);
    expect(warnings).toEqual([
      'proxySecrets / FLAGS_PROXY_SECRETS is deprecated (given as UNLEASH_PROXY_SECRETS); use clientKeys / FLAGS_PROXY_CLIENT_KEYS instead',
    ]);

    const both = parseConfig(
      { logger: silentLogger },
      { ...REFERENCE_ENV, UNLEASH_PROXY_SECRETS: 'old-secret' },
    );
    expect(both.clientKeys).toEqual(['ref-key-1', 'ref-key-2']);
  });

  test('start-up logs one info line naming the aliases in use, never their values', () => {
    const { logger, lines } = recordingLogger();
    parseConfig(
      { logger, unleashInstanceId: 'code-instance-id' },
      { ...REFERENCE_ENV, FLAGS_URL: 'http://ours:4242/api', UNLEASH_FETCH_INTERVAL: '1000' },
    );
    const info = lines.filter((l) => l.level === 'info').map((l) => l.msg);
    expect(info).toEqual([
      "Configuration read under the reference Unleash proxy's names: UNLEASH_API_TOKEN, UNLEASH_PROXY_CLIENT_KEYS, unleashInstanceId, UNLEASH_FETCH_INTERVAL",
    ]);
    const all = lines.map((l) => l.msg).join('\n');
    for (const value of ['reference-token', 'ref-key-1', 'code-instance-id', 'http://upstream']) {
      expect(all).not.toContain(value);
    }
  });

  test('logs no alias line when only our names are used', () => {
    const { logger, lines } = recordingLogger();
    parseConfig({ logger }, OURS);
    expect(lines.filter((l) => l.level === 'info')).toEqual([]);
  });

  test('a missing required option is named with its alias', () => {
    const problems = configProblems(() => parseConfig({ logger: silentLogger }, { UNLEASH_API_TOKEN: 't' }));
    expect(problems).toEqual([
      'Missing required configuration: flagsUrl: FLAGS_URL (or UNLEASH_URL or UPSTREAM_URL), clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)',
    ]);
  });

  test('an invalid value read under an alias is named by the alias and its twin', () => {
    const problems = configProblems(() =>
      parseConfig(
        { logger: silentLogger },
        { ...REFERENCE_ENV, UNLEASH_URL: 'upstream:4242', UNLEASH_METRICS_INTERVAL: 'often' },
      ),
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^Invalid UNLEASH_URL="upstream:4242" \(alias of FLAGS_URL\): must be/);
    expect(problems[1]).toBe(
      'Invalid UNLEASH_METRICS_INTERVAL="often" (alias of FLAGS_METRICS_INTERVAL): must be a whole non-negative number, e.g. 5000',
    );
  });

  test('an invalid secret read under an alias is named without its value', () => {
    const problems = configProblems(() =>
      parseConfig({ logger: silentLogger }, { ...REFERENCE_ENV, UNLEASH_PROXY_CLIENT_KEYS: ' , ' }),
    );
    expect(problems).toEqual([
      'Invalid UNLEASH_PROXY_CLIENT_KEYS (alias of FLAGS_PROXY_CLIENT_KEYS): must list at least one entry, comma-separated',
    ]);
  });

  test('an invalid code alias is named as the option and its twin', () => {
    const problems = configProblems(() =>
      parseConfig({ logger: silentLogger, unleashUrl: 'nope', clientKeys: ['k'], flagsApiToken: 't' }, {}),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^Invalid option unleashUrl \(alias of flagsUrl\): must be/);
  });

  test('aliased secrets are scrubbed from log lines like our own', () => {
    const { logger, lines } = recordingLogger();
    const config = parseConfig({ logger }, REFERENCE_ENV);
    config.logger.warn('upstream said reference-token and ref-key-2');
    expect(lines.at(-1)?.msg).toBe('upstream said [redacted] and [redacted]');
  });
});

describe("Unleash Edge's names", () => {
  const EDGE_ENV = {
    UPSTREAM_URL: 'http://unleash:4242',
    TOKENS: '*:development.edge-dev,*:production.edge-prod',
    PRETRUSTED_TOKENS: 'edge-key@development',
  };

  test('an Edge deployment’s variables configure the proxy, with /api appended to UPSTREAM_URL', () => {
    const config = parseConfig({ logger: silentLogger }, { ...EDGE_ENV, REDIS_URL: 'redis://cache:6379' });
    expect(config.flagsUrl).toBe('http://unleash:4242/api');
    expect(config.flagsApiTokens).toEqual(['*:development.edge-dev', '*:production.edge-prod']);
    expect(config.flagsApiToken).toBe('*:development.edge-dev');
    expect(config.clientKeys).toEqual(['edge-key@development']);
    expect(config.redisUrl).toBe('redis://cache:6379');
  });

  test('an UPSTREAM_URL that already ends in /api is kept', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...EDGE_ENV, UPSTREAM_URL: 'http://unleash:4242/api/' },
    );
    expect(config.flagsUrl).toBe('http://unleash:4242/api');
  });

  test('a FLAGS_* variable wins over the Edge name', () => {
    const config = parseConfig(
      { logger: silentLogger },
      {
        ...EDGE_ENV,
        FLAGS_URL: 'http://ours:1/api',
        FLAGS_API_TOKEN: 'our-token',
        FLAGS_PROXY_CLIENT_KEYS: 'k',
      },
    );
    expect([config.flagsUrl, config.flagsApiToken, config.clientKeys]).toEqual([
      'http://ours:1/api',
      'our-token',
      ['k'],
    ]);
  });

  test('the start-up info line names the Edge variables in use, never their values', () => {
    const { logger, lines } = recordingLogger();
    parseConfig({ logger }, EDGE_ENV);
    const info = lines.filter((l) => l.level === 'info').map((l) => l.msg);
    expect(info).toEqual([
      "Configuration read under Unleash Edge's names: UPSTREAM_URL, TOKENS, PRETRUSTED_TOKENS",
    ]);
  });

  test('client keys are optional with Unleash-format upstream tokens, required without or with validation off (named as Edge names them)', () => {
    const { UPSTREAM_URL, TOKENS } = EDGE_ENV;
    expect(parseConfig({ logger: silentLogger }, { UPSTREAM_URL, TOKENS }).clientKeys).toEqual([]);
    const missingKeys = [
      "PRETRUSTED_TOKENS is missing, and needed while no TOKENS entry is in Unleash's format or FLAGS_UPSTREAM_TOKEN_VALIDATION=false (keys cannot be validated upstream): comma-separated frontend tokens, each `<project>:<environment>.<secret>` (e.g. `*:production.a1b2c3`) or `<secret>@<environment>`",
    ];
    expect(
      configProblems(() =>
        parseConfig(
          { logger: silentLogger },
          { UPSTREAM_URL, TOKENS, FLAGS_UPSTREAM_TOKEN_VALIDATION: 'false' },
        ),
      ),
    ).toEqual(missingKeys);
    expect(
      configProblems(() => parseConfig({ logger: silentLogger }, { UPSTREAM_URL, TOKENS: 'legacy-token' })),
    ).toEqual(missingKeys);
  });
});

describe("client keys stay required outside Unleash Edge's names", () => {
  const MISSING_KEYS =
    'Missing required configuration: clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)';
  const UNLEASH_TOKEN = '*:production.upstream-secret';

  test.each([
    ["the specification's names", { FLAGS_URL: 'http://u:4242/api', FLAGS_API_TOKEN: UNLEASH_TOKEN }],
    ["the reference proxy's names", { UNLEASH_URL: 'http://u:4242/api', UNLEASH_API_TOKEN: UNLEASH_TOKEN }],
    ['FLAGS_URL with TOKENS', { FLAGS_URL: 'http://u:4242/api', TOKENS: UNLEASH_TOKEN }],
    ['UPSTREAM_URL with FLAGS_API_TOKEN', { UPSTREAM_URL: 'http://u:4242', FLAGS_API_TOKEN: UNLEASH_TOKEN }],
  ])('an Unleash-format token under %s without client keys is refused, naming the variable', (_what, env) => {
    expect(configProblems(() => parseConfig({ logger: silentLogger }, env))).toEqual([MISSING_KEYS]);
  });

  test('code options are the specification’s names: clientKeys is required there too', () => {
    expect(
      configProblems(() =>
        parseConfig(
          { logger: silentLogger, flagsUrl: 'http://u:4242/api', flagsApiToken: UNLEASH_TOKEN },
          {},
        ),
      ),
    ).toEqual([MISSING_KEYS]);
  });

  test('with client keys configured, unconfigured Unleash tokens are still validated upstream', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { FLAGS_URL: 'http://u:4242/api', FLAGS_API_TOKEN: UNLEASH_TOKEN, FLAGS_PROXY_CLIENT_KEYS: 'k' },
    );
    expect([config.clientKeys, config.upstreamTokenValidation]).toEqual([['k'], true]);
  });
});
