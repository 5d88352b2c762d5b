import { readFileSync } from 'node:fs';
import path from 'node:path';
import { silentLogger } from '../../src/common/logging/logger';
import {
  EXAMPLE_FEATURES_FILE,
  SERVER_OPTIONS,
  parseServerConfig,
  serverConfigMarkdownTable,
  serverEnvExample,
} from '../../src/server';
import { parseAdminTokenEntry } from '../../src/server/auth/admin-tokens';
import { configProblems } from '../support/config-problems';

const root = path.join(__dirname, '..', '..');

describe('parseServerConfig', () => {
  it('uses the documented defaults when nothing is configured', () => {
    const config = parseServerConfig({ logger: silentLogger }, {});
    expect(config).toMatchObject({
      port: 4242,
      databaseUrl: undefined,
      databaseSchema: 'public',
      dataDir: path.resolve('.data/flags-server'),
      featuresFile: EXAMPLE_FEATURES_FILE,
      featuresWatchInterval: 1000,
      environments: ['development', 'production'],
      clientTokens: [],
      adminTokens: [],
      logLevel: 'info',
      useJsonLogger: false,
    });
  });

  it('reads every variable, FLAGS_SERVER_PORT winning over PORT', () => {
    const config = parseServerConfig(
      { logger: silentLogger },
      {
        PORT: '1111',
        FLAGS_SERVER_PORT: '5555',
        DATABASE_URL: 'postgres://u:p@db:5432/flags',
        FLAGS_SERVER_DATABASE_SCHEMA: 'flags',
        FLAGS_SERVER_DATA_DIR: 'memory',
        FLAGS_SERVER_FEATURES_FILE: 'my/features.json',
        FLAGS_SERVER_FEATURES_WATCH_INTERVAL: '0',
        FLAGS_SERVER_ENVIRONMENTS: 'dev, staging ,prod,,dev',
        FLAGS_SERVER_CLIENT_TOKENS: 'c1,c2',
        FLAGS_SERVER_ADMIN_TOKENS: 'a1, v1:Viewer, *:*.unleash-style',
        LOG_LEVEL: 'debug',
        JSON_LOGGER: 'yes',
      },
    );
    expect(config).toMatchObject({
      port: 5555,
      databaseUrl: 'postgres://u:p@db:5432/flags',
      databaseSchema: 'flags',
      dataDir: 'memory',
      featuresFile: path.resolve('my/features.json'),
      featuresWatchInterval: 0,
      environments: ['dev', 'staging', 'prod'],
      clientTokens: ['c1', 'c2'],
      adminTokens: [
        { token: 'a1', role: 'Admin' },
        { token: 'v1', role: 'Viewer' },
        { token: '*:*.unleash-style', role: 'Admin' },
      ],
      logLevel: 'debug',
      useJsonLogger: true,
    });
    expect(parseServerConfig({ logger: silentLogger }, { PORT: '1111' }).port).toBe(1111);
  });

  it('lets options given in code win over the environment, even 0', () => {
    const config = parseServerConfig(
      { port: 0, adminTokens: [{ token: 't', role: 'Editor' }], environments: ['qa'], logger: silentLogger },
      { FLAGS_SERVER_PORT: '5555', FLAGS_SERVER_ADMIN_TOKENS: 'x', FLAGS_SERVER_ENVIRONMENTS: 'a' },
    );
    expect(config.port).toBe(0);
    expect(config.adminTokens).toEqual([{ token: 't', role: 'Editor' }]);
    expect(config.environments).toEqual(['qa']);
  });

  it('names every malformed variable together, without echoing secrets', () => {
    const list = configProblems(() =>
      parseServerConfig(
        {},
        {
          FLAGS_SERVER_PORT: '99999',
          DATABASE_URL: 'mysql://secret-password@db',
          FLAGS_SERVER_ENVIRONMENTS: ',',
          LOG_LEVEL: 'loud',
          JSON_LOGGER: 'maybe',
          FLAGS_SERVER_DATABASE_SCHEMA: 'Bad-Schema',
        },
      ),
    );
    expect(list).toHaveLength(6);
    expect(list.join('\n')).toMatch(/FLAGS_SERVER_PORT="99999": must be a port number/);
    expect(list.join('\n')).toMatch(/DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(list.join('\n')).not.toContain('secret-password');
    expect(list.join('\n')).toMatch(/LOG_LEVEL="loud"/);
    expect(list.join('\n')).toMatch(/FLAGS_SERVER_ENVIRONMENTS/);
  });

  it('refuses a features watch interval past an hour, naming the variable and the bound', () => {
    expect(
      configProblems(() =>
        parseServerConfig({ logger: silentLogger }, { FLAGS_SERVER_FEATURES_WATCH_INTERVAL: '2592000000' }),
      ),
    ).toEqual([
      'Invalid FLAGS_SERVER_FEATURES_WATCH_INTERVAL="2592000000": must be at most 3600000 ms (1 hour)',
    ]);
    expect(
      parseServerConfig({ logger: silentLogger }, { FLAGS_SERVER_FEATURES_WATCH_INTERVAL: '3600000' })
        .featuresWatchInterval,
    ).toBe(3_600_000);
  });

  it('refuses a token listed as both a client and an admin token', () => {
    expect(
      configProblems(() =>
        parseServerConfig(
          { logger: silentLogger },
          { FLAGS_SERVER_CLIENT_TOKENS: 'same', FLAGS_SERVER_ADMIN_TOKENS: 'same' },
        ),
      ),
    ).toEqual([expect.stringMatching(/both in FLAGS_SERVER_CLIENT_TOKENS and FLAGS_SERVER_ADMIN_TOKENS/)]);
  });

  it('parses admin token entries as token or token:RoleName', () => {
    expect(parseAdminTokenEntry('abc')).toEqual({ token: 'abc', role: 'Admin' });
    expect(parseAdminTokenEntry('abc:Viewer')).toEqual({ token: 'abc', role: 'Viewer' });
    expect(parseAdminTokenEntry('a:b:Release Manager')).toEqual({ token: 'a:b', role: 'Release Manager' });
    expect(parseAdminTokenEntry('*:*.0123abc')).toEqual({ token: '*:*.0123abc', role: 'Admin' });
  });
});

describe('the documentation of the configuration', () => {
  it('has exactly the generated configuration table in the flags-server page', () => {
    const page = readFileSync(path.join(root, 'docs', 'flags-server.md'), 'utf8');
    const section = /<!-- flags-server:start -->([\s\S]*)<!-- flags-server:end -->/.exec(page)?.[1];
    expect(section).toBeDefined();
    expect(section).toContain(serverConfigMarkdownTable());
  });

  it('lists every variable in the table and in .env.server.example', () => {
    const table = serverConfigMarkdownTable();
    const example = readFileSync(path.join(root, '.env.server.example'), 'utf8');
    expect(example).toBe(serverEnvExample());
    for (const spec of SERVER_OPTIONS) {
      expect(table).toContain(`\`${spec.key}\``);
      for (const variable of spec.env) expect(table).toContain(`\`${variable}\``);
      if (spec.env.length > 0) expect(example).toContain(`#${spec.env[0]}=`);
    }
  });
});
