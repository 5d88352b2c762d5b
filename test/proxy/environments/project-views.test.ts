/**
 * A project view's validators and change streams follow what its answers depend on: its toggles,
 * their parents in other projects and the segments of both — not the rest of the environment. And
 * an upstream that sends no ETags (every poll answered in full) makes no change of the same
 * definitions.
 */
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const UPSTREAM_TOKEN = '*:default.upstream-views-secret';
/** Every project of the environment. */
const ALL_KEY = 'all-projects-key';
/** Limited to project p1 (pretrusted, in Unleash's format). */
const P1_KEY = 'p1:default.p1-key-secret';

const toggle = (name: string, project: string, extra: Record<string, unknown> = {}) => ({
  name,
  project,
  enabled: true,
  strategies: [{ name: 'default' }],
  ...extra,
});

/** p1's `child` depends on `parent` in p2, enabled for u1 only; `elsewhere` (p2) is no parent of p1's. */
function definitions(parentUsers: string, elsewhere = 'a'): FeaturesPayload {
  return {
    version: 2,
    features: [
      toggle('child', 'p1', { dependencies: [{ feature: 'parent' }] }),
      toggle('own', 'p1'),
      toggle('parent', 'p2', { strategies: [{ name: 'userWithId', parameters: { userIds: parentUsers } }] }),
      toggle('elsewhere', 'p2', {
        strategies: [{ name: 'userWithId', parameters: { userIds: elsewhere } }],
      }),
    ],
  };
}

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(definitions('u1'), UPSTREAM_TOKEN).start();
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function proxy(): Promise<ProxyApp> {
  const app = proxyFor(upstream, {
    flagsApiToken: UPSTREAM_TOKEN,
    clientKeys: [ALL_KEY, P1_KEY],
    refreshInterval: 50,
  });
  apps.push(app);
  await app.whenReady();
  return app;
}

const enabledNames = (res: request.Response): string[] =>
  (res.body as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();

/** Waits until the whole environment answers `elsewhere` for `user` as `enabled`. */
async function untilElsewhere(app: ProxyApp, user: string, enabled: boolean): Promise<void> {
  await waitFor(async () => {
    const res = await request(app).get(`/proxy?userId=${user}`).set('Authorization', ALL_KEY);
    return enabledNames(res).includes('elsewhere') === enabled;
  });
}

/** An open change stream of `key`: everything it received so far, and how many events. */
async function openStream(url: string, key: string, query = '') {
  const controller = new AbortController();
  const res = await fetch(`${url}/ofrep/v1/flag-changes${query}`, {
    headers: { Authorization: key },
    signal: controller.signal,
  });
  expect(res.status).toBe(200);
  const stream = { text: '', events: () => stream.text.split('refetchEvaluation').length - 1 };
  const reader = res.body!.getReader();
  const reading = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      stream.text += Buffer.from(value!).toString('utf8');
    }
  })();
  await waitFor(() => stream.text.includes(': connected'));
  return Object.assign(stream, {
    close: async () => {
      controller.abort();
      await reading;
    },
  });
}

describe('the derived ETag of a project view', () => {
  test('changes when only a parent in another project changes: the old one is no 304 for the new answer', async () => {
    const app = await proxy();
    const before = await request(app).get('/proxy?userId=u2').set('Authorization', P1_KEY);
    expect(before.status).toBe(200);
    expect(enabledNames(before)).toEqual(['own']);
    expect(before.headers.etag).toMatch(/^W\/"d-/);
    // the parent (p2, outside the view) now enables u2 too: the child follows for u2
    upstream.setFeatures(definitions('u1,u2'));
    await waitFor(async () => {
      const res = await request(app).get('/proxy?userId=u2').set('Authorization', ALL_KEY);
      return enabledNames(res).includes('parent');
    });
    const after = await request(app)
      .get('/proxy?userId=u2')
      .set('Authorization', P1_KEY)
      .set('If-None-Match', String(before.headers.etag));
    expect(after.status).toBe(200);
    expect(enabledNames(after)).toEqual(['child', 'own']);
    expect(after.headers.etag).toMatch(/^W\/"d-/);
    expect(after.headers.etag).not.toBe(before.headers.etag);
    // the same through POST and OFREP bulk
    const posted = await request(app)
      .post('/proxy')
      .set('Authorization', P1_KEY)
      .send({ context: { userId: 'u2' } });
    expect(enabledNames(posted)).toEqual(['child', 'own']);
    const bulk = await request(app)
      .post('/ofrep/v1/evaluate/flags')
      .set('Authorization', P1_KEY)
      .send({ context: { targetingKey: 'u2' } });
    expect(bulk.body.flags).toEqual([
      expect.objectContaining({ key: 'child', value: true }),
      expect.objectContaining({ key: 'own', value: true }),
    ]);
  });

  test('stays the same when a toggle of another project that no toggle of the view depends on changes', async () => {
    const app = await proxy();
    const before = await request(app).get('/proxy?userId=u2').set('Authorization', P1_KEY);
    const whole = await request(app).get('/proxy?userId=u2').set('Authorization', ALL_KEY);
    upstream.setFeatures(definitions('u1', 'u2'));
    await untilElsewhere(app, 'u2', true);
    const again = await request(app)
      .get('/proxy?userId=u2')
      .set('Authorization', P1_KEY)
      .set('If-None-Match', String(before.headers.etag));
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(before.headers.etag);
    // while the whole environment's answer did change
    const wholeAgain = await request(app)
      .get('/proxy?userId=u2')
      .set('Authorization', ALL_KEY)
      .set('If-None-Match', String(whole.headers.etag));
    expect(wholeAgain.status).toBe(200);
  });
});

describe('the change stream of a project-limited key', () => {
  test('is told of changes to its toggles and their parents elsewhere, not of other projects’ changes', async () => {
    const app = await proxy();
    const url = await servers.listen(app);
    const view = await openStream(url, P1_KEY);
    const whole = await openStream(url, ALL_KEY);
    try {
      // another project's toggle that is no parent of p1's: the whole environment's stream is told
      // (the sentinel), the view's is not
      upstream.setFeatures(definitions('u1', 'u2'));
      await waitFor(() => whole.events() === 1);
      await untilElsewhere(app, 'u2', true);
      // both streams are written in the same turn: a later event on the whole stream proves the
      // view's had its chance
      upstream.setFeatures(definitions('u1', 'u3'));
      await waitFor(() => whole.events() === 2);
      expect(view.events()).toBe(0);
      // the parent in p2 of p1's child changes: the view's answers may change
      upstream.setFeatures(definitions('u1,u2', 'u3'));
      await waitFor(() => view.events() === 1);
      // a toggle of its own project changes
      const own = definitions('u1,u2', 'u3');
      own.features[1] = toggle('own', 'p1', { enabled: false });
      upstream.setFeatures(own);
      await waitFor(() => view.events() === 2);
      await waitFor(() => whole.events() === 4);
    } finally {
      await view.close();
      await whole.close();
    }
  });

  test('names its view’s version: a stream opened with the version of the bulk answer hears nothing until the view changes', async () => {
    const app = await proxy();
    /** The version the view's bulk answer names (the `since` of its stream URL). */
    const versionNamed = async (): Promise<string> => {
      const bulk = await request(app)
        .post('/ofrep/v1/evaluate/flags')
        .set('Authorization', P1_KEY)
        .send({ context: { targetingKey: 'u1' } });
      return String(new URL(String(bulk.body.eventStreams[0].url)).searchParams.get('since'));
    };
    const since = await versionNamed();
    // other projects change: the view's version stays what the bulk answer named
    upstream.setFeatures(definitions('u1', 'u2'));
    await untilElsewhere(app, 'u2', true);
    expect(await versionNamed()).toBe(since);
    const url = await servers.listen(app);
    const stream = await openStream(url, P1_KEY, `?since=${encodeURIComponent(since)}`);
    try {
      // the view changes: its new version's event is the only one (an event for a `since` other
      // than the view's version would have been sent on connecting, before it on the same socket)
      upstream.setFeatures(definitions('u1,u2', 'u2'));
      await waitFor(async () => {
        const res = await request(app).get('/proxy?userId=u2').set('Authorization', P1_KEY);
        return enabledNames(res).includes('child');
      });
      const changed = await versionNamed();
      expect(changed).not.toBe(since);
      await waitFor(() => stream.text.includes(`id: ${changed}`));
      expect(stream.events()).toBe(1);
    } finally {
      await stream.close();
    }
  });
});

describe('an upstream that sends no ETags', () => {
  test('the same definitions polled again are no change: no stream event, the same revision and ETags; a real change still arrives', async () => {
    upstream.etags = false;
    const app = await proxy();
    const url = await servers.listen(app);
    const whole = await openStream(url, ALL_KEY);
    const view = await openStream(url, P1_KEY);
    try {
      const revision = app.features.revision;
      const first = await request(app).get('/proxy?userId=u1').set('Authorization', ALL_KEY);
      expect(first.headers.etag).toMatch(/^W\/"d-/);
      // several full answers of the same definitions
      const polled = upstream.featureRequests().length;
      await waitFor(() => upstream.featureRequests().length >= polled + 5);
      expect(app.features.revision).toBe(revision);
      const again = await request(app)
        .get('/proxy?userId=u1')
        .set('Authorization', ALL_KEY)
        .set('If-None-Match', String(first.headers.etag));
      expect(again.status).toBe(304);
      // a real change: the sentinel (and proof that the earlier polls would have been told)
      upstream.setFeatures(definitions('u1', 'u1'));
      await waitFor(() => whole.events() >= 1);
      expect(whole.events()).toBe(1);
      expect(view.events()).toBe(0);
      expect(app.features.revision).toBe(revision + 1);
      const changed = await request(app)
        .get('/proxy?userId=u1')
        .set('Authorization', ALL_KEY)
        .set('If-None-Match', String(first.headers.etag));
      expect(changed.status).toBe(200);
      expect(enabledNames(changed)).toContain('elsewhere');
    } finally {
      await whole.close();
      await view.close();
    }
  });
});

describe('the clock in a project view', () => {
  test('a date of a parent in another project passing changes the view’s answer and ETag', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    upstream.setFeatures({
      version: 2,
      features: [
        toggle('child', 'p1', { dependencies: [{ feature: 'soon' }] }),
        // a date of the view's own, far away: the view's answers are remembered per clock window
        toggle('dated', 'p1', {
          strategies: [
            {
              name: 'default',
              constraints: [
                { contextName: 'currentTime', operator: 'DATE_BEFORE', value: '2090-01-01T00:00:00.000Z' },
              ],
            },
          ],
        }),
        toggle('soon', 'p2', {
          strategies: [
            {
              name: 'default',
              constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: at }],
            },
          ],
        }),
      ],
    });
    const app = await proxy();
    const before = await request(app).get('/proxy?userId=u1').set('Authorization', P1_KEY);
    expect(enabledNames(before)).toEqual(['dated']);
    expect(before.headers.etag).toMatch(/^W\/"d-/);
    await waitFor(async () => {
      const res = await request(app).get('/proxy?userId=u1').set('Authorization', ALL_KEY);
      return enabledNames(res).includes('soon');
    });
    const after = await request(app)
      .get('/proxy?userId=u1')
      .set('Authorization', P1_KEY)
      .set('If-None-Match', String(before.headers.etag));
    expect(after.status).toBe(200);
    expect(enabledNames(after)).toEqual(['child', 'dated']);
  });
});

describe('segments in a project view', () => {
  test('a segment used only by a parent in another project changing changes the view’s answer and ETag', async () => {
    const withSegment = (users: string[]): FeaturesPayload => ({
      version: 2,
      features: [
        toggle('child', 'p1', { dependencies: [{ feature: 'segmented' }] }),
        toggle('segmented', 'p2', { strategies: [{ name: 'default', segments: [7] }] }),
      ],
      segments: [
        { id: 7, name: 'testers', constraints: [{ contextName: 'userId', operator: 'IN', values: users }] },
      ],
    });
    upstream.setFeatures(withSegment(['u1']));
    const app = await proxy();
    const before = await request(app).get('/proxy?userId=u2').set('Authorization', P1_KEY);
    expect(enabledNames(before)).toEqual([]);
    expect(before.headers.etag).toMatch(/^W\/"d-/);
    upstream.setFeatures(withSegment(['u1', 'u2']));
    await waitFor(async () => {
      const res = await request(app).get('/proxy?userId=u2').set('Authorization', ALL_KEY);
      return enabledNames(res).includes('segmented');
    });
    const after = await request(app)
      .get('/proxy?userId=u2')
      .set('Authorization', P1_KEY)
      .set('If-None-Match', String(before.headers.etag));
    expect(after.status).toBe(200);
    expect(enabledNames(after)).toEqual(['child']);
  });
});
