import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { referenceSdk } from '../../support/reference-sdk';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

/** Strings the SDK tells apart that UTF-8 would not: lone surrogates and U+FFFD. */
const LOOKALIKES = ['bob\uD83D', 'bob\uD83C', 'bob\uFFFD', 'bob\uDE00', 'bob'];

/** Toggles whose answers depend on the exact userId and on a property, through the SDK's own code. */
const definitions: FeaturesPayload = {
  version: 2,
  features: [
    {
      name: 'only-d83d',
      enabled: true,
      strategies: [{ name: 'userWithId', parameters: { userIds: 'bob\uD83D' } }],
    },
    {
      name: 'only-fffd-plan',
      enabled: true,
      strategies: [
        { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['x\uFFFD'] }] },
      ],
    },
    {
      name: 'split',
      enabled: true,
      strategies: [
        { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'g' } },
      ],
      variants: [
        { name: 'a', weight: 500, stickiness: 'userId' },
        { name: 'b', weight: 500, stickiness: 'userId' },
      ],
    },
  ],
};

describe('validators are exact', () => {
  const servers = new LoopbackServers();
  let upstream: TestUpstream;
  let app: ProxyApp;
  let url: string;

  beforeAll(async () => {
    upstream = await new TestUpstream(definitions).start();
    app = await readyProxyFor(upstream);
    url = await servers.listen(app);
  });
  afterAll(async () => {
    await servers.closeAll();
    await app.close();
    await upstream.stop();
  });

  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { etag: res.headers.get('etag') ?? '', body: await res.text() };
  };

  test('userIds that differ only in a lone surrogate or U+FFFD get different derived ETags and their own answers', async () => {
    const etags = new Set<string>();
    for (const userId of LOOKALIKES) {
      const first = await post('/proxy', { context: { userId } });
      expect(first.etag).toMatch(/^W\/"d-/);
      etags.add(first.etag);
      const enabled = (JSON.parse(first.body) as { toggles: { name: string }[] }).toggles.map((t) => t.name);
      expect(enabled.includes('only-d83d')).toBe(userId === 'bob\uD83D');
      // a kept answer (second request) is this context's own
      expect((await post('/proxy', { context: { userId } })).body).toBe(first.body);
    }
    expect(etags.size).toBe(LOOKALIKES.length);
    const bulk = new Set<string>();
    for (const userId of LOOKALIKES)
      bulk.add((await post('/ofrep/v1/evaluate/flags', { context: { targetingKey: userId } })).etag);
    expect(bulk.size).toBe(LOOKALIKES.length);
  });

  test('for full-Unicode strings over POST, the kept answers and OFREP bulk: equal ETag implies equal SDK answer', async () => {
    const sdk = referenceSdk(definitions, { appName: 'flags-proxy', environment: 'default' });
    const byEtag = new Map<string, string>();
    const bulkByEtag = new Map<string, string>();
    const unit = fc.oneof(
      fc.constantFrom('\uD83D', '\uD83C', '\uDE00', '\uFFFD', 'x', 'b', '\u00e9', 'e\u0301'),
      fc.string({ unit: 'binary', maxLength: 2 }),
    );
    const text = fc.array(unit, { maxLength: 4 }).map((parts) => parts.join(''));
    await fc.assert(
      fc.asyncProperty(text, text, async (userId, plan) => {
        const context = { userId: `bob${userId}`, properties: { plan: `x${plan}` } };
        const answer = await post('/proxy', { context, toggles: ['only-d83d', 'only-fffd-plan', 'split'] });
        const toggles = (
          JSON.parse(answer.body) as { toggles: { name: string; enabled: boolean; variant: unknown }[] }
        ).toggles;
        for (const t of toggles) {
          const expected = sdk(t.name, { ...context, remoteAddress: '127.0.0.1' });
          expect({ name: t.name, enabled: t.enabled, variant: t.variant }).toEqual({
            name: t.name,
            ...(expected as object),
          });
        }
        const known = byEtag.get(answer.etag);
        if (known !== undefined) expect(answer.body).toBe(known);
        byEtag.set(answer.etag, answer.body);
        const bulk = await post('/ofrep/v1/evaluate/flags', {
          context: { targetingKey: `bob${userId}`, plan: `x${plan}` },
        });
        const flags = JSON.stringify((JSON.parse(bulk.body) as { flags: unknown }).flags);
        const seen = bulkByEtag.get(bulk.etag);
        if (seen !== undefined) expect(flags).toBe(seen);
        bulkByEtag.set(bulk.etag, flags);
      }),
      { numRuns: 150 },
    );
  });
});
