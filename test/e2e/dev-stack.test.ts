/**
 * The `npm run dev` stack, started in process on free ports and in memory: the curl lines of the
 * banner are executed as printed (parsed back into requests) and must give the documented answers.
 */
import { silentLogger } from '../../src/common/logging/logger';
import {
  DEV_ADMIN_TOKEN,
  DEV_CLIENT_KEY,
  DEV_CLIENT_TOKEN,
  DEV_FRONTEND_TOKEN,
  devStackBanner,
  startDevStack,
  type DevStack,
} from '../../src/dev/stack';

let stack: DevStack;

beforeAll(async () => {
  stack = await startDevStack(
    // PORT would be the proxy's port; the flag server must not pick it up.
    { PORT: '0', FLAGS_SERVER_PORT: '0' },
    {
      server: { dataDir: 'memory', logger: silentLogger, featuresWatchInterval: 0 },
      // A short poll: the SDK re-arms its poll timer after a fetch in flight at close, and under
      // jest (NODE_ENV=test) that timer is not unref'd, so a long one would hold the worker.
      proxy: { logger: silentLogger, metricsInterval: 60_000, refreshInterval: 200 },
    },
  );
});

afterAll(async () => {
  await stack?.close();
});

interface Curl {
  method: string;
  headers: Record<string, string>;
  body?: string;
  url: string;
}

/** Parses the curl lines this banner prints: -X, -H '...', -d '...', then the URL (quoted or not). */
function parseCurl(line: string): Curl {
  const tokens = [...line.trim().matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
  expect(tokens.shift()).toBe('curl');
  const curl: Curl = { method: 'GET', headers: {}, url: '' };
  while (tokens.length > 0) {
    const token = tokens.shift() ?? '';
    if (token === '-X') curl.method = tokens.shift() ?? '';
    else if (token === '-H') {
      const [name, ...value] = (tokens.shift() ?? '').split(':');
      curl.headers[name] = value.join(':').trim();
    } else if (token === '-d') curl.body = tokens.shift();
    else curl.url = token;
  }
  return curl;
}

async function run(curl: Curl): Promise<{ status: number; body: unknown }> {
  const res = await fetch(curl.url, { method: curl.method, headers: curl.headers, body: curl.body });
  return { status: res.status, body: await res.json() };
}

describe('npm run dev stack', () => {
  it('is ready and prints URLs, the client key, the admin token and curl lines that work as printed', async () => {
    expect(stack.ready).toBe(true);
    const banner = devStackBanner(stack, 'qa-reviewer-test');
    const curls = banner
      .split('\n')
      .filter((l) => l.trim().startsWith('curl '))
      .map(parseCurl);
    expect(curls).toHaveLength(5);
    expect(banner).toContain(DEV_CLIENT_KEY);
    expect(banner).toContain(DEV_FRONTEND_TOKEN);
    expect(banner).toContain(DEV_ADMIN_TOKEN);
    expect(banner).toContain(`${stack.proxyUrl}/proxy`);
    expect(banner).toContain(stack.serverUrl);
    // the status page's URL, as printed, serves the page and its data names the stack's environment
    const statusUrl = /status page +(\S+)/.exec(banner)?.[1];
    expect(statusUrl).toBe(`${stack.proxyUrl}/internal-backstage/status`);
    expect((await fetch(`${statusUrl}`)).status).toBe(200);
    const status = (await (await fetch(`${statusUrl}.json`)).json()) as {
      environments: Array<{ name: string }>;
    };
    expect(status.environments.map((e) => e.name)).toEqual(['development']);

    const [evaluate, evaluateScoped, createRole, listRoles, validateToken] = curls;
    expect(evaluate.headers).toEqual({ Authorization: DEV_CLIENT_KEY });
    const flags = await run(evaluate);
    expect(flags.status).toBe(200);
    const names = (flags.body as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['beta-dashboard', 'new-checkout', 'search-v2']));

    // the frontend token is no configured key: the proxy asks flags-server and serves its scope
    expect(evaluateScoped.headers).toEqual({ Authorization: DEV_FRONTEND_TOKEN });
    expect(evaluateScoped.url).toBe(`${stack.proxyUrl}/api/frontend?userId=alice`);
    const scoped = await run(evaluateScoped);
    expect(scoped.status).toBe(200);
    expect((scoped.body as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name)).toEqual(names);
    const wrong = await run({ ...evaluateScoped, headers: { Authorization: '*:development.not-issued' } });
    expect(wrong.status).toBe(401);

    const created = await run(createRole);
    expect(created).toEqual({
      status: 200,
      body: {
        version: 1,
        roles: {
          id: expect.any(Number),
          type: 'root-custom',
          name: 'qa-reviewer-test',
          description: expect.any(String),
          project: null,
        },
      },
    });
    const again = await run(createRole);
    expect(again.status).toBe(409);

    const listed = await run(listRoles);
    expect(listed.status).toBe(200);
    expect((listed.body as { roles: Array<{ name: string }> }).roles.map((r) => r.name)).toContain(
      'qa-reviewer-test',
    );

    expect(validateToken.url).toBe(`${stack.serverUrl}/edge/validate`);
    expect(validateToken.headers.Authorization).toBeUndefined();
    expect(await run(validateToken)).toEqual({
      status: 200,
      body: {
        tokens: [
          { token: DEV_FRONTEND_TOKEN, type: 'frontend', environment: 'development', projects: ['*'] },
        ],
      },
    });
  });

  it('the proxy polls the flag server with the dev client token', async () => {
    expect(stack.proxy.proxyConfig.flagsUrl).toBe(`${stack.flagServer.url}/api`);
    expect(stack.proxy.proxyConfig.flagsApiToken).toBe(DEV_CLIENT_TOKEN);
    expect(stack.flagServer.flagServer.config.clientTokens).toEqual([DEV_CLIENT_TOKEN]);
    expect(stack.flagServer.flagServer.config.featuresFile).toMatch(/examples[/\\]features\.json$/);
  });
});
