import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { LoopbackServers } from '../../support/listen';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { referenceSdk } from '../../support/reference-sdk';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

/** Mutations per run: CI's 60 by default; `FUZZ_RUNS=1000 npx jest test/proxy/upstream/definitions-fuzz` for a deeper search. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 60);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Container = Json[] | { [key: string]: Json };
type Path = (string | number)[];

/** Every place in a JSON tree that holds a value, as paths from the root. */
function pathsOf(value: Json, at: Path = [], out: Path[] = []): Path[] {
  const entries: [string | number, Json][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : value !== null && typeof value === 'object'
      ? Object.entries(value)
      : [];
  for (const [key, child] of entries) {
    out.push([...at, key]);
    pathsOf(child, [...at, key], out);
  }
  return out;
}

function parentOf(root: Json, path: Path): { parent: Container; key: string | number } {
  let node = root as Container;
  for (const key of path.slice(0, -1)) node = (node as Record<string | number, Json>)[key] as Container;
  return { parent: node, key: path[path.length - 1] };
}

/** Values that break naive code: wrong types, empties, huge and NaN-like numbers and strings. */
const hostile = fc.oneof(
  fc.constantFrom<Json>(
    null,
    {},
    [],
    [null],
    [{}],
    [[]],
    { name: null },
    true,
    false,
    0,
    -1,
    1.5,
    1e308,
    -1e308,
    Number.MAX_SAFE_INTEGER * 8,
    'NaN',
    'Infinity',
    '-Infinity',
    '1e400',
    '',
    ' ',
    '__proto__',
    'constructor',
    'x'.repeat(5000),
    '{"unterminated":',
    'v1.2.3',
    'not a date',
  ),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
);

type Mutation =
  | { kind: 'delete'; at: number }
  | { kind: 'replace'; at: number; value: Json }
  | { kind: 'insert'; at: number; key: string; value: Json }
  | { kind: 'duplicate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostile }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    key: fc.constantFrom(
      'dependencies',
      'overrides',
      'segments',
      'parameters',
      'variants',
      'value',
      'values',
    ),
    value: hostile,
  }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat() }),
);

function mutate(valid: FeaturesPayload, mutations: Mutation[]): FeaturesPayload {
  const root = structuredClone(valid) as unknown as Json;
  for (const m of mutations) {
    const paths = pathsOf(root).filter((p) => p[0] === 'features' || p[0] === 'segments');
    if (paths.length === 0) break;
    const path = paths[m.at % paths.length];
    const { parent, key } = parentOf(root, path);
    const slot = parent as Record<string | number, Json>;
    if (m.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete slot[key];
    } else if (m.kind === 'replace') slot[key] = m.value;
    else if (m.kind === 'insert') {
      const target = slot[key];
      if (Array.isArray(target)) target.push(m.value);
      else if (target !== null && typeof target === 'object') target[m.key] = m.value;
      else slot[key] = { [m.key]: m.value };
    } else if (Array.isArray(parent)) parent.push(structuredClone(parent[Number(key)]));
  }
  return root as unknown as FeaturesPayload;
}

describe('definitions fuzzing', () => {
  const servers = new LoopbackServers();
  let upstream: TestUpstream | undefined;
  let app: ProxyApp | undefined;

  afterAll(async () => {
    await servers.closeAll();
    await app?.close();
    await upstream?.stop();
  });

  test(
    'random mutations of valid toggles are evaluated exactly as the SDK evaluates them: a toggle that throws whenever it is enabled is quarantined alone, one that throws for some contexts is answered disabled for them, never a 5xx',
    async () => {
      const valid = sampleFeatures();
      upstream = await new TestUpstream(valid).start();
      const logger = capturingLogger();
      const proxy = await readyProxyFor(upstream, { refreshInterval: 20, logger });
      app = proxy;
      const url = await servers.listen(proxy);
      const context = { userId: 'beta-1', sessionId: 's2', properties: { plan: 'pro', version: '3.0.0' } };

      const answers = async (names?: string[]) => {
        const get = await fetch(`${url}/proxy?userId=u1&sessionId=s1&plan=pro&version=2.1.0`, {
          headers: { authorization: CLIENT_KEY },
        });
        const post = await fetch(`${url}/proxy`, {
          method: 'POST',
          headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
          body: JSON.stringify({ context, ...(names ? { toggles: names } : {}) }),
        });
        return {
          get: { status: get.status, body: await get.text() },
          post: { status: post.status, body: await post.text() },
        };
      };
      const good = await answers();
      expect(good.get.status).toBe(200);
      expect(good.post.status).toBe(200);

      /**
       * Two polls after a set was served, the proxy has handled the first answer with it (polls
       * run one after another): a set the SDK stores as the current definitions (e.g. a duplicate
       * name it collapses) is then no change, and no new revision.
       */
      const polledTwice = (): (() => boolean) => {
        const polls = upstream?.featureRequests().length ?? 0;
        return () => (upstream?.featureRequests().length ?? 0) >= polls + 2;
      };

      /**
       * Serves a definitions set and waits until the proxy has taken it, or refused the answer. A
       * fetch error alone does not end the wait. A toggle the SDK's validation reports (`strategies`
       * or `variants` not a list, `enabled` not a boolean) is no fetch error: the SDK stores the set
       * all the same. Such a set may also be no change (a malformed toggle shadowed by a later one
       * of the same name, which the SDK keeps), and then makes no new revision.
       */
      const serve = async (payload: FeaturesPayload): Promise<'accepted' | 'refused'> => {
        const { revision, stats } = proxy.features;
        const { definitionsRefused, fetchErrors } = stats;
        const handled = polledTwice();
        upstream?.setFeatures(payload);
        await waitFor(
          () =>
            proxy.features.revision !== revision ||
            stats.definitionsRefused !== definitionsRefused ||
            handled(),
          5000,
        );
        const refused = stats.definitionsRefused !== definitionsRefused || stats.fetchErrors !== fetchErrors;
        return proxy.features.revision !== revision || !refused ? 'accepted' : 'refused';
      };

      let outcomes = { accepted: 0, refused: 0, quarantined: 0 };
      await fc.assert(
        fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (mutations) => {
          const mutated = mutate(valid, mutations);
          if (JSON.stringify(mutated) === JSON.stringify(valid)) return; // nothing to tell apart
          const errorsBefore = logger.lines.filter((l) => l.level === 'error').length;
          const outcome = await serve(mutated);
          outcomes = { ...outcomes, [outcome]: outcomes[outcome] + 1 };
          const names = proxy.features.toggles().map((t) => t.name);
          const now = await answers(names);
          expect(now.get.status).toBe(200);
          expect(now.post.status).toBe(200);
          const errors = logger.lines.filter((l) => l.level === 'error').slice(errorsBefore);
          if (outcome === 'refused') {
            // only an answer that is no definitions document (no list of features) is refused
            expect(Array.isArray((mutated as { features?: unknown }).features)).toBe(false);
          } else {
            // every toggle answers exactly what the SDK answers; one that would throw is disabled
            const sdk = referenceSdk(mutated, { appName: 'flags-proxy', environment: 'default' });
            const toggles = (
              JSON.parse(now.post.body) as { toggles: { name: string; enabled: boolean; variant: unknown }[] }
            ).toggles;
            expect(toggles.map((t) => t.name)).toEqual(names);
            const sdkThrew = new Set<string>();
            for (const toggle of toggles) {
              // The SDK may answer by chance (e.g. a variant stickiness that names no context field
              // seeds with Math.random): its possible answers are sampled, the proxy's must be one.
              const samples = Array.from({ length: 20 }, () =>
                sdk(toggle.name, { ...context, remoteAddress: '127.0.0.1' }),
              );
              const got = { enabled: toggle.enabled, variant: toggle.variant };
              // the GET's context too: its line may name a toggle that throws only for that one
              const getContext = {
                userId: 'u1',
                sessionId: 's1',
                remoteAddress: '127.0.0.1',
                properties: { plan: 'pro', version: '2.1.0' },
              };
              if (samples.includes('threw') || sdk(toggle.name, getContext) === 'threw')
                sdkThrew.add(toggle.name);
              if (proxy.features.fault(toggle.name) || samples.includes('threw')) {
                expect(toggle).toMatchObject({
                  enabled: false,
                  variant: { name: 'disabled', enabled: false },
                });
              } else {
                const possible = [...new Set(samples.map((a) => JSON.stringify(a)))];
                expect({ name: toggle.name, answer: JSON.stringify(got), possible }).toEqual({
                  name: toggle.name,
                  answer: possible.length === 1 ? possible[0] : expect.any(String),
                  possible,
                });
                expect(possible).toContain(JSON.stringify(got));
              }
            }
            if (proxy.features.stats.togglesQuarantined > 0) outcomes.quarantined += 1;
            // The only error lines name quarantined toggles (once per revision), or a toggle the SDK
            // itself throws for with this context: one whose shape throws only for some contexts
            // (a later strategy, a constraint after others) is evaluated, not quarantined, and its
            // failure is reported. Nothing else threw.
            for (const line of errors) {
              const threw = /^evaluating toggle "(.*)" threw; answering it as disabled/.exec(line.msg);
              if (threw) expect(sdkThrew).toContain(threw[1]);
              else expect(line.msg).toMatch(/^quarantined: /);
            }
          }
          // back to the valid set
          const { revision } = proxy.features;
          const handled = polledTwice();
          upstream?.setFeatures(valid);
          await waitFor(() => proxy.features.revision !== revision || handled(), 5000);
          expect(await answers()).toEqual(good);
        }),
        { numRuns: RUNS, interruptAfterTimeLimit: RUNS * 250, markInterruptAsFailure: false },
      );
      // the mutations reach the quarantine and the plain evaluation
      expect(outcomes.accepted).toBeGreaterThan(0);
      expect(outcomes.quarantined).toBeGreaterThan(0);
      expect((await fetch(`${url}/proxy/health`)).status).toBe(200);
    },
    RUNS * 250 + 15_000,
  );
});
