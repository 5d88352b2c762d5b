import http, { type IncomingMessage } from 'node:http';
import net from 'node:net';
import type { ProxyApp } from '../../../src/proxy/app';
import { streamToken } from '../../../src/proxy/ofrep/auth';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { ofrepFeatures, withToggle } from './fixtures';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();
const opened: Stream[] = [];

const STREAM = '/ofrep/v1/flag-changes';

interface Stream {
  res: IncomingMessage;
  text(): string;
  ended: Promise<void>;
  close(): void;
}

async function serve(
  options: Parameters<typeof readyProxyFor>[1] = {},
): Promise<{ app: ProxyApp; url: string }> {
  const app = await readyProxyFor(upstream, options);
  apps.push(app);
  return { app, url: await servers.listen(app) };
}

function openStream(url: string, headers: Record<string, string> = {}): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      const ended = new Promise<void>((done) => res.once('close', () => done()));
      const stream = { res, text: () => text, ended, close: () => req.destroy() };
      opened.push(stream);
      resolve(stream);
    });
    req.on('error', reject);
  });
}

const tokenUrl = (url: string, extra = '') => `${url}${STREAM}?token=${streamToken(CLIENT_KEY)}${extra}`;

async function metricsText(url: string): Promise<string> {
  const res = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
    headers: { Authorization: CLIENT_KEY },
  });
  return res.text();
}

beforeAll(async () => {
  upstream = await new TestUpstream(ofrepFeatures()).start();
});

afterEach(async () => {
  for (const s of opened.splice(0)) s.close();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await servers.closeAll();
  upstream.setFeatures(ofrepFeatures());
});

afterAll(async () => {
  await upstream.stop();
});

describe('OFREP change stream', () => {
  test('opens with the stream token from the bulk answer, as an uncompressed event stream', async () => {
    const { url } = await serve();
    const bulk = await fetch(`${url}/ofrep/v1/evaluate/flags`, {
      method: 'POST',
      headers: { Authorization: CLIENT_KEY, 'Content-Type': 'application/json' },
      body: '{}',
    });
    const { eventStreams } = (await bulk.json()) as { eventStreams: Array<{ url: string }> };
    const stream = await openStream(eventStreams[0].url, { 'Accept-Encoding': 'gzip' });
    expect(stream.res.statusCode).toBe(200);
    expect(stream.res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.res.headers['content-encoding']).toBeUndefined();
    expect(stream.res.headers['access-control-allow-origin']).toBe('*');
    await waitFor(() => stream.text().startsWith(': connected\n\n'));
    // The URL names the definitions the answer was computed from: nothing changed since, no event.
    await new Promise((r) => setTimeout(r, 100));
    expect(stream.text()).not.toContain('data:');
  });

  test('sends refetchEvaluation with an id, the new etag and lastModified when the definitions change', async () => {
    const { app, url } = await serve();
    const stream = await openStream(tokenUrl(url));
    const before = app.changeStreams.version();
    upstream.setFeatures(withToggle(ofrepFeatures(), 'switched-off', true));
    await waitFor(() => stream.text().includes('data:'));
    const after = app.changeStreams.version();
    expect(after.id).not.toBe(before.id);
    const frame =
      stream
        .text()
        .split('\n\n')
        .find((f) => f.includes('data:')) ?? '';
    const lines = frame.split('\n');
    expect(lines).toContain(`id: ${after.id}`);
    expect(lines).toContain('event: message');
    const data = JSON.parse((lines.find((l) => l.startsWith('data: ')) ?? '').slice(6)) as Record<
      string,
      unknown
    >;
    expect(data).toEqual({ type: 'refetchEvaluation', etag: after.etag, lastModified: after.lastModified });
    expect(Math.abs((data.lastModified as number) - Date.now() / 1000)).toBeLessThan(5);
  });

  test("a bulk answer's stream URL names the definitions it was computed from, also after they change", async () => {
    const { app, url } = await serve();
    const sinceOf = async (): Promise<string | null> => {
      const bulk = await fetch(`${url}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { Authorization: CLIENT_KEY, 'Content-Type': 'application/json' },
        body: '{}',
      });
      expect(bulk.status).toBe(200);
      const { eventStreams } = (await bulk.json()) as { eventStreams: Array<{ url: string }> };
      return new URL(eventStreams[0].url).searchParams.get('since');
    };
    const before = app.changeStreams.version().id;
    expect(await sinceOf()).toBe(before);
    upstream.setFeatures(withToggle(ofrepFeatures(), 'switched-off', true));
    await waitFor(() => app.changeStreams.version().id !== before);
    expect(await sinceOf()).toBe(app.changeStreams.version().id);
  });

  test('gives the same event id for the same definitions on another replica', async () => {
    const a = await serve();
    const b = await serve();
    expect(a.app.changeStreams.version().id).toBe(b.app.changeStreams.version().id);
  });

  test('sends the current event at once to a client whose Last-Event-ID is out of date', async () => {
    const { app, url } = await serve();
    const stream = await openStream(tokenUrl(url), { 'Last-Event-ID': 'an-old-version' });
    await waitFor(() => stream.text().includes(`id: ${app.changeStreams.version().id}`));
  });

  test('sends comment heartbeats', async () => {
    const { url } = await serve({ streamHeartbeatInterval: 50 });
    const stream = await openStream(tokenUrl(url));
    await waitFor(() => stream.text().split(':\n\n').length > 3, 2000);
  });

  test('accepts the client key in a header instead of the token', async () => {
    const { url } = await serve();
    const stream = await openStream(`${url}${STREAM}`, { 'X-API-Key': CLIENT_KEY });
    expect(stream.res.statusCode).toBe(200);
  });

  test('answers 401 without a body to a wrong token, a client key used as token, or nothing', async () => {
    const { url } = await serve();
    for (const target of [
      `${url}${STREAM}?token=nope`,
      `${url}${STREAM}?token=${CLIENT_KEY}`,
      `${url}${STREAM}`,
    ]) {
      const res = await fetch(target);
      expect({ target, status: res.status, body: await res.text() }).toEqual({
        target,
        status: 401,
        body: '',
      });
    }
  });

  test('never puts the token or key into metric labels', async () => {
    const { app, url } = await serve();
    const stream = await openStream(tokenUrl(url));
    await fetch(`${url}${STREAM}?token=wrong-token-value`);
    // a stream is counted once it ends; a refused one before its route, as `unmatched`
    stream.close();
    await waitFor(() => app.changeStreams.size === 0);
    await waitFor(async () => (await metricsText(url)).includes('route="/ofrep/v1/flag-changes"'));
    const text = await metricsText(url);
    expect(text).not.toContain(streamToken(CLIENT_KEY));
    expect(text).not.toContain('wrong-token-value');
    expect(text).toMatch(
      /flags_proxy_http_requests_total\{method="GET",route="\/ofrep\/v1\/flag-changes",status="200"\} 1/,
    );
    expect(text).toMatch(/flags_proxy_http_requests_total\{method="GET",route="unmatched",status="401"\} 1/);
  });

  test('counts open streams in Prometheus', async () => {
    const { app, url } = await serve();
    await openStream(tokenUrl(url));
    const second = await openStream(tokenUrl(url));
    await waitFor(() => app.changeStreams.size === 2);
    expect(await metricsText(url)).toMatch(/^flags_proxy_event_streams 2$/m);
    second.close();
    await waitFor(() => app.changeStreams.size === 1);
    expect(await metricsText(url)).toMatch(/^flags_proxy_event_streams 1$/m);
  });

  test('refuses streams over FLAGS_MAX_STREAMS with 503, and a flood of opens does not starve evaluation', async () => {
    const { app, url } = await serve({ maxStreams: 5 });
    const attempts = await Promise.all(
      Array.from({ length: 40 }, () =>
        fetch(tokenUrl(url)).then(async (res) => {
          if (res.status !== 200) await res.text();
          return res;
        }),
      ),
    );
    const statuses = attempts.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 503)).toHaveLength(35);
    const refused = attempts.find((r) => r.status === 503);
    expect(refused?.headers.get('retry-after')).toBe('5');
    expect(app.changeStreams.size).toBe(5);
    const started = Date.now();
    const evaluation = await fetch(`${url}/proxy`, { headers: { Authorization: CLIENT_KEY } });
    expect(evaluation.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await metricsText(url)).toMatch(/flags_proxy_event_streams_refused_total\{reason="limit"\} 35/);
    for (const r of attempts) if (r.status === 200) await r.body?.cancel();
  });

  test('cuts a client that never reads once its write buffer fills, and keeps a reading one', async () => {
    const { app, url } = await serve();
    const { port } = new URL(url);
    const silent = net.connect(Number(port), '127.0.0.1');
    await new Promise<void>((resolve) => silent.once('connect', () => resolve()));
    silent.write(`GET ${STREAM}?token=${streamToken(CLIENT_KEY)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    silent.pause();
    const silentClosed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
    silent.on('error', () => undefined);
    await waitFor(() => app.changeStreams.size === 1);
    const reader = await openStream(tokenUrl(url));
    await waitFor(() => app.changeStreams.size === 2);
    let sent = 0;
    while (app.changeStreams.size === 2 && sent < 400_000) {
      for (let i = 0; i < 100; i++) app.changeStreams.publish();
      sent += 100;
      await new Promise((r) => setImmediate(r));
    }
    expect(app.changeStreams.size).toBe(1);
    silent.resume();
    await silentClosed;
    expect(reader.res.destroyed).toBe(false);
    expect(await metricsText(url)).toMatch(
      /flags_proxy_event_streams_refused_total\{reason="slow_reader"\} 1/,
    );
  });

  test('createApp().close() ends every stream and refuses new ones', async () => {
    const { app, url } = await serve();
    const streams = [await openStream(tokenUrl(url)), await openStream(tokenUrl(url))];
    await waitFor(() => app.changeStreams.size === 2);
    await app.close();
    await Promise.all(streams.map((s) => s.ended));
    expect(streams.every((s) => s.res.complete)).toBe(true);
    expect(app.changeStreams.size).toBe(0);
    const late = await fetch(tokenUrl(url));
    expect(late.status).toBe(503);
  });
});
