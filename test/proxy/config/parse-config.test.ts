import { readFileSync } from 'node:fs';
import path from 'node:path';
import { optionsMarkdownTable, envExampleLines } from '../../../src/common/config/markdown';
import { ConfigError } from '../../../src/common/config/resolve';
import { silentLogger, type Logger } from '../../../src/common/logging/logger';
import { PROXY_OPTIONS } from '../../../src/proxy/config/options';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { configProblems } from '../../support/config-problems';

const REQUIRED = {
  FLAGS_URL: 'http://upstream:4242/api',
  FLAGS_API_TOKEN: 'tok',
  FLAGS_PROXY_CLIENT_KEYS: 'k1,k2',
};

describe('proxy configuration', () => {
  test('applies the defaults of spec 4.9 when only the required variables are set', () => {
    const config = parseConfig({ logger: silentLogger }, REQUIRED);
    expect(config).toMatchObject({
      flagsUrl: 'http://upstream:4242/api',
      clientKeys: ['k1', 'k2'],
      port: 3000,
      proxyBasePath: '',
      flagsAppName: 'flags-proxy',
      refreshInterval: 5000,
      metricsInterval: 30000,
      metricsJitter: 0,
      environment: undefined,
      logLevel: 'warn',
      useJsonLogger: false,
      trustProxy: false,
      clientKeysHeaderName: 'authorization',
      enableOAS: false,
      enableAllEndpoint: false,
      httpOptions: { rejectUnauthorized: true },
      cors: {
        origin: '*',
        credentials: false,
        exposedHeaders: ['ETag'],
        maxAge: 172800,
        methods: ['GET', 'POST'],
        optionsSuccessStatus: 204,
        preflightContinue: false,
        allowedHeaders: undefined,
      },
    });
    expect(config.flagsInstanceId).toMatch(/^flags-proxy-/);
  });

  test('names every missing required option and its variable in one line', () => {
    const problems = configProblems(() => parseConfig({ logger: silentLogger }, {}));
    expect(problems).toEqual([
      'Missing required configuration: flagsUrl: FLAGS_URL (or UNLEASH_URL or UPSTREAM_URL), flagsApiToken: FLAGS_API_TOKEN (or UNLEASH_API_TOKEN or TOKENS), clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)',
    ]);
  });

  test.each([
    [
      'FLAGS_FETCH_INTERVAL',
      'soon',
      'Invalid FLAGS_FETCH_INTERVAL="soon": must be a whole non-negative number',
    ],
    [
      'FLAGS_METRICS_INTERVAL',
      '-5',
      'Invalid FLAGS_METRICS_INTERVAL="-5": must be a whole non-negative number',
    ],
    [
      'FLAGS_METRICS_JITTER',
      '1.5',
      'Invalid FLAGS_METRICS_JITTER="1.5": must be a whole non-negative number',
    ],
    [
      'TRUST_PROXY',
      'maybe',
      'Invalid TRUST_PROXY="maybe": must be true, false, a hop count, or comma-separated IP',
    ],
    ['FLAGS_TAGS', 'nocolon', 'Invalid FLAGS_TAGS="nocolon": entry "nocolon" must be tagName:tagValue'],
    ['ENABLE_ALL_ENDPOINT', 'sure', 'Invalid ENABLE_ALL_ENDPOINT="sure": must be a boolean'],
    ['LOG_LEVEL', 'verbose', 'Invalid LOG_LEVEL="verbose": must be one of debug, info, warn, error, fatal'],
    ['PORT', '99999', 'Invalid PORT="99999": must be a port number'],
    ['FLAGS_URL', 'upstream:4242', 'Invalid FLAGS_URL="upstream:4242": must be'],
    ['CORS_MAX_AGE', 'long', 'Invalid CORS_MAX_AGE="long": must be a whole non-negative number'],
  ])('refuses %s=%s with a message naming the variable and the accepted form', (name, value, expected) => {
    const problems = configProblems(() =>
      parseConfig({ logger: silentLogger }, { ...REQUIRED, [name]: value }),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0].startsWith(expected)).toBe(true);
  });

  test('never echoes the value of a secret that does not parse', () => {
    const problems = configProblems(() =>
      parseConfig({ logger: silentLogger }, { ...REQUIRED, FLAGS_PROXY_CLIENT_KEYS: ' , ' }),
    );
    expect(problems).toEqual([
      'Invalid FLAGS_PROXY_CLIENT_KEYS: must list at least one entry, comma-separated',
    ]);
  });

  test('parses booleans as true/false/1/0/yes/no in any case', () => {
    for (const [raw, expected] of [
      ['TRUE', true],
      ['yes', true],
      ['1', true],
      ['No', false],
      ['0', false],
      ['false', false],
    ] as const) {
      expect(parseConfig({ logger: silentLogger }, { ...REQUIRED, ENABLE_OAS: raw }).enableOAS).toBe(
        expected,
      );
    }
  });

  test('trims lists and drops empty entries', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...REQUIRED, FLAGS_PROXY_CLIENT_KEYS: ' a, ,b ,', CORS_METHODS: 'GET, POST ,OPTIONS' },
    );
    expect(config.clientKeys).toEqual(['a', 'b']);
    expect(config.cors.methods).toEqual(['GET', 'POST', 'OPTIONS']);
  });

  test('parses trustProxy as boolean, hop count or IP/CIDR list', () => {
    const trust = (value: string) =>
      parseConfig({ logger: silentLogger }, { ...REQUIRED, TRUST_PROXY: value }).trustProxy;
    expect(trust('true')).toBe(true);
    expect(trust('false')).toBe(false);
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.0/8, 127.0.0.1,loopback')).toEqual(['10.0.0.0/8', '127.0.0.1', 'loopback']);
    expect(() => trust('10.0.0.0/40')).toThrow(ConfigError);
  });

  test('parses tags, base path, header name and CORS origin lists', () => {
    const config = parseConfig(
      { logger: silentLogger },
      {
        ...REQUIRED,
        FLAGS_TAGS: 'team:web, area:checkout',
        PROXY_BASE_PATH: 'base/path/',
        CLIENT_KEY_HEADER_NAME: 'X-Client-Key',
        CORS_ORIGIN: 'https://a.example, https://b.example',
      },
    );
    expect(config.tags).toEqual([
      { name: 'team', value: 'web' },
      { name: 'area', value: 'checkout' },
    ]);
    expect(config.proxyBasePath).toBe('/base/path');
    expect(config.clientKeysHeaderName).toBe('x-client-key');
    expect(config.cors.origin).toEqual(['https://a.example', 'https://b.example']);
  });

  test('an option given in code beats the environment, even false or 0', () => {
    const config = parseConfig(
      {
        logger: silentLogger,
        enableAllEndpoint: false,
        refreshInterval: 0,
        flagsAppName: 'from-code',
        cors: { credentials: false },
      },
      {
        ...REQUIRED,
        ENABLE_ALL_ENDPOINT: 'true',
        FLAGS_FETCH_INTERVAL: '900',
        FLAGS_APP_NAME: 'from-env',
        CORS_CREDENTIALS: 'true',
      },
    );
    expect(config.enableAllEndpoint).toBe(false);
    expect(config.refreshInterval).toBe(0);
    expect(config.flagsAppName).toBe('from-code');
    expect(config.cors.credentials).toBe(false);
  });

  test('PORT wins over PROXY_PORT, and PROXY_PORT is used alone', () => {
    expect(
      parseConfig({ logger: silentLogger }, { ...REQUIRED, PORT: '4000', PROXY_PORT: '5000' }).port,
    ).toBe(4000);
    expect(parseConfig({ logger: silentLogger }, { ...REQUIRED, PROXY_PORT: '5000' }).port).toBe(5000);
  });

  test('accepts the deprecated FLAGS_PROXY_SECRETS and logs a deprecation warning', () => {
    const warnings: string[] = [];
    const logger: Logger = { ...silentLogger, warn: (msg: string) => warnings.push(msg) };
    const { FLAGS_PROXY_CLIENT_KEYS: _unused, ...env } = REQUIRED;
    const config = parseConfig({ logger }, { ...env, FLAGS_PROXY_SECRETS: 'old-secret' });
    expect(config.clientKeys).toEqual(['old-secret']);
    // (the short secrets of this configuration are named too: test/proxy/config/short-secrets.test.ts)
    expect(warnings.filter((w) => !w.includes('shorter than'))).toEqual([
      expect.stringContaining('FLAGS_PROXY_SECRETS is deprecated'),
    ]);
    expect(warnings.join()).not.toContain('old-secret');
  });

  test('clientKeys wins over proxySecrets when both are set', () => {
    const config = parseConfig({ logger: silentLogger }, { ...REQUIRED, FLAGS_PROXY_SECRETS: 'old' });
    expect(config.clientKeys).toEqual(['k1', 'k2']);
  });

  test('refuses a value that is both a client key and a server-side SDK token, naming both variables, never the value', () => {
    const shared = 'shared-secret-4f9c';
    const problems = configProblems(() =>
      parseConfig(
        { logger: silentLogger },
        {
          ...REQUIRED,
          FLAGS_PROXY_CLIENT_KEYS: `k1,${shared}`,
          EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: `t1,${shared}`,
        },
      ),
    );
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('clientKeys (FLAGS_PROXY_CLIENT_KEYS)');
    expect(problems[0]).toContain('expServerSideSdkConfig.tokens (EXP_SERVER_SIDE_SDK_CONFIG_TOKENS)');
    expect(problems.join('\n')).not.toContain(shared);
  });

  test('refuses the same overlap through the deprecated FLAGS_PROXY_SECRETS and through options in code', () => {
    const { FLAGS_PROXY_CLIENT_KEYS: _unused, ...env } = REQUIRED;
    const viaSecrets = configProblems(() =>
      parseConfig(
        { logger: silentLogger },
        { ...env, FLAGS_PROXY_SECRETS: 'old-secret', EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'old-secret' },
      ),
    );
    expect(viaSecrets).toEqual([expect.stringContaining('proxySecrets (FLAGS_PROXY_SECRETS)')]);
    expect(viaSecrets[0]).toContain('EXP_SERVER_SIDE_SDK_CONFIG_TOKENS');
    expect(viaSecrets[0]).not.toContain('old-secret');

    const inCode = configProblems(() =>
      parseConfig(
        { logger: silentLogger, clientKeys: ['same'], expServerSideSdkConfig: { tokens: ['same'] } },
        { FLAGS_URL: REQUIRED.FLAGS_URL, FLAGS_API_TOKEN: REQUIRED.FLAGS_API_TOKEN },
      ),
    );
    expect(inCode).toEqual([expect.stringContaining('clientKeys (FLAGS_PROXY_CLIENT_KEYS)')]);
    expect(inCode[0]).not.toMatch(/\bsame\b/);
  });

  test('accepts distinct client keys and server-side SDK tokens', () => {
    const config = parseConfig(
      { logger: silentLogger },
      { ...REQUIRED, EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: 'server-1,server-2' },
    );
    expect(config.clientKeys).toEqual(['k1', 'k2']);
    expect(config.expServerSideSdkConfig.tokens).toEqual(['server-1', 'server-2']);
  });

  test('bootstrap options come from the environment, the Authorization header included', () => {
    const config = parseConfig(
      { logger: silentLogger },
      {
        ...REQUIRED,
        EXP_BOOTSTRAP_URL: 'http://boot/features.json',
        EXP_BOOTSTRAP_AUTHORIZATION: 'boot-secret',
      },
    );
    expect(config.expBootstrap).toEqual({
      url: 'http://boot/features.json',
      urlHeaders: { Authorization: 'boot-secret' },
    });
  });
});

describe('documentation of the options', () => {
  const root = path.resolve(__dirname, '../../..');

  test('REDIRECT_HTTP_TO_HTTPS without TLS_ENABLE is refused; with it, accepted', () => {
    expect(
      configProblems(() =>
        parseConfig({ logger: silentLogger }, { ...REQUIRED, REDIRECT_HTTP_TO_HTTPS: 'true' }),
      ),
    ).toEqual([
      'REDIRECT_HTTP_TO_HTTPS=true needs TLS_ENABLE=true (with TLS_SERVER_CERT and TLS_SERVER_KEY): without HTTPS there is nothing to redirect to',
    ]);
    const config = parseConfig(
      { logger: silentLogger },
      {
        ...REQUIRED,
        REDIRECT_HTTP_TO_HTTPS: 'true',
        TLS_ENABLE: 'true',
        TLS_SERVER_CERT: '/c.pem',
        TLS_SERVER_KEY: '/k.pem',
      },
    );
    expect(config.tls).toMatchObject({ enable: true, redirectHttpToHttps: true });
  });

  test('the configuration page holds exactly the table generated from the option declarations', () => {
    const page = readFileSync(path.join(root, 'docs', 'configuration.md'), 'utf8');
    expect(page).toContain(optionsMarkdownTable(PROXY_OPTIONS));
  });

  test('.env.example lists every variable with its default and meaning', () => {
    const example = readFileSync(path.join(root, '.env.example'), 'utf8');
    for (const line of envExampleLines(PROXY_OPTIONS)) expect(example).toContain(line);
  });

  test('every option of spec 4.9 is declared under its code name and variable', () => {
    const declared = new Map(PROXY_OPTIONS.map((o) => [o.key, o.env]));
    const spec: Array<[string, string | undefined]> = [
      ['flagsUrl', 'FLAGS_URL'],
      ['flagsApiToken', 'FLAGS_API_TOKEN'],
      ['clientKeys', 'FLAGS_PROXY_CLIENT_KEYS'],
      ['proxySecrets', 'FLAGS_PROXY_SECRETS'],
      ['port', 'PORT'],
      ['port', 'PROXY_PORT'],
      ['proxyBasePath', 'PROXY_BASE_PATH'],
      ['flagsAppName', 'FLAGS_APP_NAME'],
      ['flagsInstanceId', 'FLAGS_INSTANCE_ID'],
      ['refreshInterval', 'FLAGS_FETCH_INTERVAL'],
      ['metricsInterval', 'FLAGS_METRICS_INTERVAL'],
      ['metricsJitter', 'FLAGS_METRICS_JITTER'],
      ['environment', 'FLAGS_ENVIRONMENT'],
      ['projectName', 'FLAGS_PROJECT_NAME'],
      ['logger', undefined],
      ['useJsonLogger', 'JSON_LOGGER'],
      ['logLevel', 'LOG_LEVEL'],
      ['customStrategies', 'FLAGS_CUSTOM_STRATEGIES_FILE'],
      ['trustProxy', 'TRUST_PROXY'],
      ['namePrefix', 'FLAGS_NAME_PREFIX'],
      ['tags', 'FLAGS_TAGS'],
      ['clientKeysHeaderName', 'CLIENT_KEY_HEADER_NAME'],
      ['storageProvider', undefined],
      ['enableOAS', 'ENABLE_OAS'],
      ['enableAllEndpoint', 'ENABLE_ALL_ENDPOINT'],
      ['cors.allowedHeaders', 'CORS_ALLOWED_HEADERS'],
      ['cors.credentials', 'CORS_CREDENTIALS'],
      ['cors.exposedHeaders', 'CORS_EXPOSED_HEADERS'],
      ['cors.maxAge', 'CORS_MAX_AGE'],
      ['cors.methods', 'CORS_METHODS'],
      ['cors.optionsSuccessStatus', 'CORS_OPTIONS_SUCCESS_STATUS'],
      ['cors.origin', 'CORS_ORIGIN'],
      ['cors.preflightContinue', 'CORS_PREFLIGHT_CONTINUE'],
      ['httpOptions.rejectUnauthorized', 'HTTP_OPTIONS_REJECT_UNAUTHORIZED'],
      ['httpProxy', 'HTTP_PROXY'],
      ['httpsProxy', 'HTTPS_PROXY'],
      ['expBootstrap.url', 'EXP_BOOTSTRAP_URL'],
      ['expBootstrap.urlHeaders.Authorization', 'EXP_BOOTSTRAP_AUTHORIZATION'],
      ['expServerSideSdkConfig.tokens', 'EXP_SERVER_SIDE_SDK_CONFIG_TOKENS'],
      ['expCustomEnrichers', 'EXP_CUSTOM_ENRICHERS_FILE'],
    ];
    for (const [key, env] of spec) {
      expect(declared.has(key)).toBe(true);
      if (env) expect(declared.get(key)).toContain(env);
    }
  });
});
