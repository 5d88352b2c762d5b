import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { Strategy, type Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { ConfigError } from '../../../src/common/config/resolve';
import { loadEnrichers, loadStrategies } from '../../../src/proxy/plugins/load-plugins';
import { CLIENT_KEY, proxyFor, readyProxyFor } from '../../support/proxy';
import { type FeaturesPayload, TestUpstream } from '../../support/upstream';
import { capturingLogger } from '../../support/logger';

const PLAN_STRATEGY = 'examples/strategies/plan-strategy.js';
const COUNTRY_ENRICHER = 'examples/enrichers/country-enricher.js';
const UNLEASH_CLIENT = JSON.stringify(require.resolve('unleash-client'));

function features(): FeaturesPayload {
  return {
    version: 2,
    features: [
      {
        name: 'pro-feature',
        enabled: true,
        strategies: [{ name: 'plan', parameters: { plans: 'pro,enterprise' } }],
      },
      {
        name: 'norway-only',
        enabled: true,
        strategies: [
          { name: 'default', constraints: [{ contextName: 'country', operator: 'IN', values: ['NO'] }] },
        ],
      },
      { name: 'fragile', enabled: true, strategies: [{ name: 'explodes' }] },
      { name: 'sturdy', enabled: true, strategies: [{ name: 'default' }] },
    ],
  };
}

/** Records every line logged, by level. */
class ExplodingStrategy extends Strategy {
  calls = 0;
  constructor() {
    super('explodes');
  }
  override isEnabled(): boolean {
    this.calls += 1;
    throw new Error('strategy bug');
  }
}

const enabledNames = (body: { toggles: Array<{ name: string; enabled: boolean }> }) =>
  body.toggles.filter((t) => t.enabled).map((t) => t.name);

describe('custom strategies and context enrichers', () => {
  let upstream: TestUpstream;
  let dir: string;
  const apps: ProxyApp[] = [];
  const track = (app: ProxyApp) => (apps.push(app), app);

  beforeAll(async () => {
    upstream = await new TestUpstream(features()).start();
    dir = mkdtempSync(path.join(tmpdir(), 'flags-proxy-plugins-'));
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, content: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, content);
    return p;
  };

  describe('at request time', () => {
    it('a custom strategy from a file enables a toggle for a matching context only', async () => {
      const app = track(await readyProxyFor(upstream, { customStrategies: [PLAN_STRATEGY] }));
      const pro = await request(app)
        .get('/proxy?properties[plan]=pro')
        .set('authorization', CLIENT_KEY)
        .expect(200);
      expect(enabledNames(pro.body)).toContain('pro-feature');
      const free = await request(app).get('/proxy?plan=free').set('authorization', CLIENT_KEY).expect(200);
      expect(enabledNames(free.body)).not.toContain('pro-feature');
    });

    it('FLAGS_CUSTOM_STRATEGIES_FILE names several comma-separated files, relative to the working directory', async () => {
      const other = file(
        'other.js',
        `const { Strategy } = require(${UNLEASH_CLIENT});
         class Never extends Strategy { constructor() { super('never'); } isEnabled() { return false; } }
         module.exports = [new Never()];`,
      );
      const { createApp } = await import('../../../src/proxy/app');
      const app = track(
        createApp(
          {
            flagsUrl: upstream.url,
            flagsApiToken: upstream.token,
            clientKeys: [CLIENT_KEY],
            logger: capturingLogger(),
          },
          { FLAGS_CUSTOM_STRATEGIES_FILE: `${PLAN_STRATEGY}, ${other}` },
        ),
      );
      await app.whenReady();
      const res = await request(app)
        .post('/proxy')
        .set('authorization', CLIENT_KEY)
        .send({ context: { properties: { plan: 'enterprise' } } })
        .expect(200);
      expect(enabledNames(res.body)).toContain('pro-feature');
    });

    it('a throwing strategy answers that toggle disabled, logs rate-limited, and the next request succeeds', async () => {
      const exploding = new ExplodingStrategy();
      const logger = capturingLogger();
      const app = track(await readyProxyFor(upstream, { customStrategies: [exploding], logger }));
      for (let i = 0; i < 3; i += 1) {
        const res = await request(app)
          .post('/proxy')
          .set('authorization', CLIENT_KEY)
          .send({ context: {}, toggles: ['fragile', 'sturdy'] })
          .expect(200);
        expect(res.body.toggles).toEqual([
          expect.objectContaining({ name: 'fragile', enabled: false }),
          expect.objectContaining({ name: 'sturdy', enabled: true }),
        ]);
      }
      expect(exploding.calls).toBe(3);
      const errors = logger.lines.filter((l) => l.level === 'error' && l.msg.includes('fragile'));
      expect(errors).toHaveLength(1);
      expect(errors[0].msg).toContain('strategy bug');
      await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
    });

    it('an enricher from a file adds a property that a constraint uses', async () => {
      const app = track(await readyProxyFor(upstream, { expCustomEnrichers: [COUNTRY_ENRICHER] }));
      const norway = await request(app)
        .get('/proxy')
        .set('authorization', CLIENT_KEY)
        .set('CF-IPCountry', 'no')
        .expect(200);
      expect(enabledNames(norway.body)).toContain('norway-only');
      const sweden = await request(app)
        .get('/proxy')
        .set('authorization', CLIENT_KEY)
        .set('CF-IPCountry', 'SE')
        .expect(200);
      expect(enabledNames(sweden.body)).not.toContain('norway-only');
    });

    it('async enrichers run in file order, each seeing the previous one’s context', async () => {
      const seen: Context[] = [];
      const app = track(
        await readyProxyFor(upstream, {
          expCustomEnrichers: [
            COUNTRY_ENRICHER,
            async (context) => {
              seen.push(context);
              await new Promise((r) => setTimeout(r, 5));
              return { ...context, properties: { ...context.properties, country: 'NO' } };
            },
          ],
        }),
      );
      const res = await request(app)
        .get('/proxy?userId=u1')
        .set('authorization', CLIENT_KEY)
        .set('CF-IPCountry', 'DE');
      expect(res.status).toBe(200);
      expect(seen[0]).toMatchObject({ userId: 'u1', properties: { country: 'DE' } });
      expect(enabledNames(res.body)).toContain('norway-only');
    });

    it('a throwing enricher makes that request a 500 InternalError and the proxy keeps serving', async () => {
      let fail = true;
      const logger = capturingLogger();
      const app = track(
        await readyProxyFor(upstream, {
          logger,
          expCustomEnrichers: [
            (context) => {
              if (fail) throw new Error('enricher bug');
              return context;
            },
          ],
        }),
      );
      const res = await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(500);
      expect(res.body).toMatchObject({ name: 'InternalError' });
      expect(JSON.stringify(res.body)).not.toContain('enricher bug');
      expect(logger.lines.some((l) => l.level === 'error')).toBe(true);
      fail = false;
      await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
    });
  });

  describe('at start-up', () => {
    const startupError = (options: Parameters<typeof proxyFor>[1]): string => {
      try {
        track(proxyFor(upstream, options));
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('createApp did not fail');
    };

    it('a missing strategy file stops start-up naming the file', () => {
      const missing = path.join(dir, 'nope.js');
      const message = startupError({ customStrategies: [missing] });
      expect(message).toContain(missing);
      expect(message).toContain('file not found');
      expect(message).toContain('FLAGS_CUSTOM_STRATEGIES_FILE');
    });

    it('a relative path is resolved against the working directory and named in full', () => {
      const message = startupError({ customStrategies: ['no/such/strategies.js'] });
      expect(message).toContain(path.resolve(process.cwd(), 'no/such/strategies.js'));
    });

    it('a strategy file that throws while loading stops start-up with the file and the error', () => {
      const broken = file('throws.js', `throw new Error('boom at load');`);
      const message = startupError({ customStrategies: [broken] });
      expect(message).toContain(broken);
      expect(message).toContain('threw while loading');
      expect(message).toContain('boom at load');
    });

    it('a file with a syntax error stops start-up naming it', () => {
      const broken = file('syntax.js', `module.exports = [ new (;`);
      const message = startupError({ customStrategies: [broken] });
      expect(message).toContain(broken);
      expect(message).toContain('SyntaxError');
    });

    it('a strategy file exporting a single instance, not an array, is refused with a hint', () => {
      const single = file(
        'single.js',
        `const { Strategy } = require(${UNLEASH_CLIENT});
         module.exports = new (class extends Strategy { constructor() { super('single'); } })();`,
      );
      const message = startupError({ customStrategies: [single] });
      expect(message).toContain(single);
      expect(message).toMatch(/must export an array of strategy instances/);
      expect(message).toContain('wrap it in an array');
    });

    it('a strategy file exporting classes instead of instances is refused', () => {
      const classes = file(
        'classes.js',
        `const { Strategy } = require(${UNLEASH_CLIENT});
         module.exports = [class extends Strategy {}];`,
      );
      const message = startupError({ customStrategies: [classes] });
      expect(message).toContain(classes);
      expect(message).toContain('entry 0');
      expect(message).toContain('not a strategy instance');
    });

    it('a file that exports nothing is refused as an empty object', () => {
      const empty = file('empty.js', `const x = 1;`);
      expect(startupError({ customStrategies: [empty] })).toContain('did the file forget module.exports');
    });

    it('a strategy object not built on the SDK Strategy class is refused', () => {
      const duck = file('duck.js', `module.exports = [{ name: 'duck', isEnabled: () => true }];`);
      expect(startupError({ customStrategies: [duck] })).toContain("extend Strategy from 'unleash-client'");
    });

    it('a custom strategy named like a built-in one is refused', () => {
      const clash = file(
        'clash.js',
        `const { Strategy } = require(${UNLEASH_CLIENT});
         module.exports = [new (class extends Strategy { constructor() { super('default'); } })()];`,
      );
      expect(startupError({ customStrategies: [clash] })).toContain(
        '"default" has the name of a built-in strategy',
      );
    });

    it('a missing enricher file stops start-up naming the file and the option', () => {
      const missing = path.join(dir, 'no-enricher.js');
      const message = startupError({ expCustomEnrichers: [missing] });
      expect(message).toContain(missing);
      expect(message).toContain('EXP_CUSTOM_ENRICHERS_FILE');
    });

    it('an enricher file exporting a non-function is refused naming the entry', () => {
      const bad = file('bad-enricher.js', `module.exports = [(c) => c, { enrich: true }];`);
      const message = startupError({ expCustomEnrichers: [bad] });
      expect(message).toContain(bad);
      expect(message).toContain('entry 1');
      expect(message).toContain('not a function');
    });

    it('accepts `export default [...]` modules', () => {
      const esm = file('esm-default.js', `exports.__esModule = true; exports.default = [(c) => c];`);
      expect(loadEnrichers([esm])).toHaveLength(1);
      expect(loadStrategies([PLAN_STRATEGY]).map((s) => s.name)).toEqual(['plan']);
    });
  });
});
