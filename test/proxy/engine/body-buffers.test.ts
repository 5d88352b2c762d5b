/**
 * Response bodies of answers that are not kept reuse their memory once written
 * (`src/proxy/evaluation/body-buffers.ts`): reused only after being given back, bounded, and never
 * while a response (compressed or not) is still being written.
 */
import { gunzipSync } from 'node:zlib';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { BodyBuffers } from '../../../src/proxy/engine/body-buffers';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { togglesByUser } from '../../support/fixtures';
import { TestUpstream } from '../../support/upstream';

describe('body buffers', () => {
  test('memory given back is reused for the next body of its size class; memory not given back never is', () => {
    const buffers = new BodyBuffers();
    const first = buffers.take(20_000);
    const second = buffers.take(20_000);
    expect(second.body.buffer).not.toBe(first.body.buffer);
    first.release?.();
    first.release?.(); // twice is once
    const third = buffers.take(17_000);
    expect(third.body.buffer).toBe(first.body.buffer);
    expect(third.body.length).toBe(17_000);
    const fourth = buffers.take(20_000);
    expect(fourth.body.buffer).not.toBe(first.body.buffer);
    expect(fourth.body.buffer).not.toBe(second.body.buffer);
  });

  test('small bodies are slices of the shared pool of Node that never overlap, and are not given back', () => {
    const buffers = new BodyBuffers();
    const first = buffers.take(100);
    const second = buffers.take(300);
    expect(first.release).toBeUndefined();
    expect(second.release).toBeUndefined();
    expect([first.body.length, second.body.length]).toEqual([100, 300]);
    // one pool, two places in it
    expect(second.body.buffer).toBe(first.body.buffer);
    expect(second.body.byteOffset).toBeGreaterThanOrEqual(first.body.byteOffset + 100);
    first.body.fill(1);
    second.body.fill(2);
    expect(first.body.every((byte) => byte === 1)).toBe(true);
  });

  test('small bodies are allocated as they come, and at most four free buffers wait per size', () => {
    const buffers = new BodyBuffers();
    expect(buffers.take(100).release).toBeUndefined();
    const taken = Array.from({ length: 6 }, () => buffers.take(40_000));
    for (const t of taken) t.release?.();
    const again = Array.from({ length: 6 }, () => buffers.take(40_000).body.buffer);
    const reused = again.filter((b) => taken.some((t) => t.body.buffer === b));
    expect(reused).toHaveLength(4);
  });
});

/** 300 toggles; user-k has exactly the toggles i with i % 10 === k enabled. */
const payload = togglesByUser(300, 10);

describe('answers written from reused memory', () => {
  const upstream = new TestUpstream(payload);
  let app: ProxyApp;
  beforeAll(async () => {
    await upstream.start();
    app = await readyProxyFor(upstream, { enableAllEndpoint: true });
  });
  afterAll(async () => {
    await app.close();
    await upstream.stop();
  });

  test('many concurrent new users, compressed or not, each get their own answer intact', async () => {
    const server = app.listen(0);
    try {
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 40 }, async (_, n) => {
            const user = n % 10;
            const gzip = n % 2 === 0;
            const req = request(server)
              .get(`/proxy/all?userId=user-${user}&sessionId=s-${round}-${n}`)
              .set('Authorization', CLIENT_KEY)
              .set('Accept-Encoding', gzip ? 'gzip' : 'identity')
              .buffer(true)
              .parse((res, done) => {
                const chunks: Buffer[] = [];
                res.on('data', (c: Buffer) => chunks.push(c));
                res.on('end', () => done(null, Buffer.concat(chunks)));
              });
            const res = await req;
            const raw = res.body as Buffer;
            // the client may have inflated it already (superagent does)
            const zipped = raw[0] === 0x1f && raw[1] === 0x8b;
            const text = (zipped ? gunzipSync(raw) : raw).toString('utf8');
            if (gzip) expect(res.headers['content-encoding']).toBe('gzip');
            return { user, status: res.status, text };
          }),
        );
        for (const { user, status, text } of answers) {
          expect(status).toBe(200);
          const toggles = (JSON.parse(text) as { toggles: { name: string; enabled: boolean }[] }).toggles;
          expect(toggles).toHaveLength(300);
          const enabled = toggles.filter((t) => t.enabled).map((t) => Number(t.name.slice(-3)) % 10);
          expect(new Set(enabled)).toEqual(new Set([user]));
          expect(enabled).toHaveLength(30);
        }
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('small answers (slices of a shared pool) for many concurrent new users are each intact', async () => {
    const server = app.listen(0);
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, async (_, n) => {
          const user = n % 10;
          const res = await request(server)
            .get(`/proxy?userId=user-${user}&sessionId=small-${n}`)
            .set('Authorization', CLIENT_KEY)
            .set('Accept-Encoding', 'identity');
          return { user, res };
        }),
      );
      for (const { user, res } of answers) {
        expect(res.status).toBe(200);
        expect(Number(res.headers['content-length'])).toBeLessThan(4096);
        const toggles = (res.body as { toggles: { name: string; enabled: boolean }[] }).toggles;
        expect(toggles).toHaveLength(30);
        expect(new Set(toggles.map((t) => Number(t.name.slice(-3)) % 10))).toEqual(new Set([user]));
        expect(toggles.every((t) => t.enabled)).toBe(true);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test('OFREP bulk answers for many concurrent new users, compressed or not, are each intact', async () => {
    const server = app.listen(0);
    try {
      const answers = await Promise.all(
        Array.from({ length: 40 }, async (_, n) => {
          const user = n % 10;
          const res = await request(server)
            .post('/ofrep/v1/evaluate/flags')
            .set('Authorization', CLIENT_KEY)
            .set('Accept-Encoding', n % 2 === 0 ? 'gzip' : 'identity')
            .send({ context: { targetingKey: `user-${user}`, sessionId: `s-${n}` } });
          return { user, status: res.status, body: res.body as { flags: { key: string; value: boolean }[] } };
        }),
      );
      for (const { user, status, body } of answers) {
        expect(status).toBe(200);
        expect(body.flags).toHaveLength(300);
        const on = body.flags.filter((f) => f.value).map((f) => Number(f.key.slice(-3)) % 10);
        expect(new Set(on)).toEqual(new Set([user]));
        expect(on).toHaveLength(30);
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
