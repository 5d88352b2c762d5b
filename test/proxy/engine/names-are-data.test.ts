import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const SERVER_TOKEN = 'server-sdk-token';
const PROTOTYPE_NAMES = Object.getOwnPropertyNames(Object.prototype);

/** A toggle per name, each with two variants named after other prototype members. */
function definitionsNamed(names: readonly string[]): FeaturesPayload {
  return {
    version: 2,
    features: names.map((name, i) => ({
      name,
      enabled: true,
      project: 'default',
      strategies: [{ name: 'default' }],
      variants: [
        { name: PROTOTYPE_NAMES[i % PROTOTYPE_NAMES.length], weight: 500, stickiness: 'default' },
        { name: `${name}-b`, weight: 500, stickiness: 'default' },
      ],
    })),
  };
}

interface Toggle {
  name: string;
  enabled: boolean;
  variant: { name: string };
}

/** Object.prototype as a fresh process has it: nothing added, nothing replaced. */
function prototypeIsClean(): boolean {
  const probe: Record<string, unknown> = {};
  return (
    Object.getOwnPropertyNames(Object.prototype).length === PROTOTYPE_NAMES.length &&
    probe.yes === undefined &&
    probe.no === undefined &&
    probe.variants === undefined &&
    Object.getPrototypeOf(probe) === Object.prototype
  );
}

describe('flag names are data', () => {
  const servers = new LoopbackServers();
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await servers.closeAll();
    for (const c of cleanups.splice(0)) await c();
  });

  async function proxyWith(payload: FeaturesPayload, metricsInterval = 60_000) {
    const upstream = await new TestUpstream(payload).start();
    const app: ProxyApp = await readyProxyFor(upstream, {
      enableAllEndpoint: true,
      metricsInterval,
      expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    });
    cleanups.push(async () => {
      await app.close();
      await upstream.stop();
    });
    const url = await servers.listen(app);
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    return { upstream, app, url, post };
  }

  test('toggles and variants named like any Object.prototype member, or anything else, are listed, evaluated, served, counted and forwarded', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.string({ minLength: 1, maxLength: 12 })),
          {
            minLength: 1,
            maxLength: 20,
          },
        ),
        async (drawn) => {
          const names = [...new Set([...drawn, '__proto__', 'constructor', '.', '..'])];
          const { upstream, app, url, post } = await proxyWith(definitionsNamed(names), 100);
          const sorted = [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

          const all = await fetch(`${url}/proxy/all?userId=u1`, { headers: { authorization: CLIENT_KEY } });
          const listed = ((await all.json()) as { toggles: Toggle[] }).toggles;
          expect(listed.map((t) => t.name)).toEqual(sorted);
          expect(listed.every((t) => t.enabled)).toBe(true);

          const named = await post('/proxy', { context: { userId: 'u1' }, toggles: names });
          const answered = ((await named.json()) as { toggles: Toggle[] }).toggles;
          expect(answered.map((t) => t.name)).toEqual(names);
          expect(answered.every((t) => t.enabled)).toBe(true);

          const bulk = await post('/ofrep/v1/evaluate/flags', { context: { targetingKey: 'u1' } });
          expect(bulk.status).toBe(200);
          const flags = ((await bulk.json()) as { flags: { key: string; value: unknown }[] }).flags;
          expect(flags.map((f) => f.key)).toEqual(sorted);
          expect(flags.every((f) => f.value === true)).toBe(true);
          // "." and ".." cannot travel as a path segment: every URL-standard client resolves them
          const singles = names.filter((n) => n !== '.' && n !== '..').slice(0, 5);
          for (const name of singles) {
            const one = await post(`/ofrep/v1/evaluate/flags/${encodeURIComponent(name)}`, {
              context: { targetingKey: 'u1' },
            });
            expect(one.status).toBe(200);
            expect(((await one.json()) as { key: string }).key).toBe(name);
          }

          const server = await fetch(`${url}/proxy/client/features`, {
            headers: { authorization: SERVER_TOKEN },
          });
          const served = ((await server.json()) as { features: { name: string }[] }).features;
          expect(served.map((f) => f.name).sort()).toEqual(sorted);

          const scrape = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
            headers: { authorization: CLIENT_KEY },
          });
          expect(scrape.status).toBe(200);
          expect(prototypeIsClean()).toBe(true);
          // closing flushes the last counts: every name reached the upstream with its counts
          await app.close();
          const sent = upstream
            .posted('/api/client/metrics')
            .map(
              (r) =>
                (r.body as { bucket: { toggles: Record<string, { yes: number; variants: object }> } }).bucket
                  .toggles,
            );
          for (const name of names) {
            const counted = sent.reduce(
              (sum, toggles) =>
                sum + (Object.prototype.hasOwnProperty.call(toggles, name) ? toggles[name].yes : 0),
              0,
            );
            // /proxy/all, POST /proxy, OFREP bulk, and OFREP single for the first five
            expect({ name, counted }).toEqual({ name, counted: singles.includes(name) ? 4 : 3 });
          }
          await cleanups.pop()?.();
        },
      ),
      { numRuns: 8 },
    );
  }, 60_000);

  test('a name the definitions lack never reaches the SDK: OFREP answers FLAG_NOT_FOUND, POST /proxy answers it disabled, nothing is counted', async () => {
    const { upstream, app, post } = await proxyWith(definitionsNamed(['real']), 100);
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      const one = await post(`/ofrep/v1/evaluate/flags/${name}`, { context: { targetingKey: 'u1' } });
      expect(one.status).toBe(404);
      expect(await one.json()).toMatchObject({ key: name, errorCode: 'FLAG_NOT_FOUND' });
    }
    const named = await post('/proxy', { context: { userId: 'u1' }, toggles: ['__proto__', 'constructor'] });
    expect(((await named.json()) as { toggles: Toggle[] }).toggles).toEqual([
      {
        name: '__proto__',
        enabled: false,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
      {
        name: 'constructor',
        enabled: false,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
    ]);
    // every later evaluation still works, and nothing reached Object.prototype
    const after = await post('/proxy', { context: { userId: 'u2' } });
    expect(after.status).toBe(200);
    expect(prototypeIsClean()).toBe(true);
    await app.close();
    const counted = upstream
      .posted('/api/client/metrics')
      .flatMap((r) => Object.keys((r.body as { bucket: { toggles: object } }).bucket.toggles));
    expect(counted.filter((n) => n !== 'real')).toEqual([]);
  });

  test('client usage about toggles and variants named like Object.prototype members is relayed with those names', async () => {
    const { upstream, app, post } = await proxyWith(definitionsNamed(['real']), 100);
    const toggles = Object.fromEntries(
      PROTOTYPE_NAMES.map((name) => [name, { yes: 1, no: 2, variants: Object.fromEntries([[name, 3]]) }]),
    );
    // Object.prototype's own names include `__proto__`: fromEntries and JSON keep it as an own key
    const body = JSON.stringify({
      appName: 'web',
      instanceId: 'i1',
      bucket: { start: new Date().toISOString(), stop: new Date().toISOString(), toggles },
    });
    expect(body).toContain('"__proto__":{"yes":1');
    const sent = await fetch(`${await servers.listen(app)}/proxy/client/metrics`, {
      method: 'POST',
      headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
      body,
    });
    expect(sent.status).toBe(202);
    await app.close();
    const forwarded = upstream
      .posted('/api/client/metrics')
      .map(
        (r) =>
          r.body as {
            appName: string;
            bucket: { toggles: Record<string, { yes: number; variants: Record<string, number> }> };
          },
      )
      .filter((b) => b.appName === 'web');
    expect(forwarded).toHaveLength(1);
    const relayed = forwarded[0].bucket.toggles;
    for (const name of PROTOTYPE_NAMES) {
      expect(Object.prototype.hasOwnProperty.call(relayed, name)).toBe(true);
      expect(relayed[name].yes).toBe(1);
      expect(relayed[name].variants[name]).toBe(3);
    }
    expect(prototypeIsClean()).toBe(true);
    void post;
  });
});
