/**
 * Evaluation answers are compressed by `compression/body-encoding.ts` in one call, not by the `compression`
 * middleware's stream: the same encoding chosen for every `Accept-Encoding` (compared with the real
 * middleware), bytes that decode to the uncompressed answer, `Content-Length` of what is sent,
 * `Vary: Accept-Encoding` on every answer, small bodies as they are.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import compression from 'compression';
import type { ProxyApp } from '../../../src/proxy/app';
import { COMPRESSION_THRESHOLD } from '../../../src/proxy/compression/body-encoding';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { togglesByUser } from '../../support/fixtures';
import { TestUpstream } from '../../support/upstream';

/** 60 toggles, each on for user-{i % 3}: a list of several KB. */
const payload = togglesByUser(60, 3, 2);

const ACCEPT_ENCODINGS = [
  undefined,
  '',
  'identity',
  'gzip',
  'deflate',
  'br',
  'GZIP',
  'gzip, deflate, br, zstd',
  'gzip, deflate',
  'deflate, gzip',
  'br;q=0, gzip',
  'gzip;q=0.5, deflate;q=0.9',
  'br;q=0.8, gzip;q=0.8',
  '*',
  '*;q=0',
  'identity;q=0',
  'gzip;q=0, br;q=0, deflate;q=0',
  'zstd',
  'compress, x-gzip',
];

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
}

/** A request over a real socket, the body as sent (no client-side decoding). */
function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

function decoded(answer: Answer): string {
  const encoding = answer.headers['content-encoding'];
  const raw = answer.raw;
  const bytes =
    encoding === 'br'
      ? zlib.brotliDecompressSync(raw)
      : encoding === 'gzip'
        ? zlib.gunzipSync(raw)
        : encoding === 'deflate'
          ? zlib.inflateSync(raw)
          : raw;
  return bytes.toString('utf8');
}

function withEncoding(accept: string | undefined, headers: Record<string, string>): Record<string, string> {
  return accept === undefined ? headers : { ...headers, 'accept-encoding': accept };
}

describe('evaluation answers compressed in one call', () => {
  const upstream = new TestUpstream(payload);
  let app: ProxyApp;
  let server: http.Server;
  let port: number;
  /** The `compression` middleware as the proxy configured it before, serving a body of the same size. */
  let reference: http.Server;
  let referencePort: number;
  beforeAll(async () => {
    await upstream.start();
    app = await readyProxyFor(upstream, { enableAllEndpoint: true });
    server = app.listen(0);
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    port = (server.address() as AddressInfo).port;
    const middleware = compression({ threshold: COMPRESSION_THRESHOLD });
    const big = Buffer.from(JSON.stringify({ toggles: 'x'.repeat(4000) }));
    reference = http.createServer((req, res) => {
      middleware(req as never, res as never, () => {
        res.setHeader('Content-Type', 'application/json; charset=utf-8');
        res.setHeader('Content-Length', big.length);
        res.end(big);
      });
    });
    await new Promise<void>((resolve) => reference.listen(0, '127.0.0.1', () => resolve()));
    referencePort = (reference.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => reference.close(() => resolve()));
    await app.close();
    await upstream.stop();
  });

  test.each(ACCEPT_ENCODINGS.map((a) => [a === undefined ? '(none)' : JSON.stringify(a), a]))(
    'Accept-Encoding %s: the encoding the compression middleware chooses, bytes that decode to the answer',
    async (_label, accept) => {
      const expected = await send(referencePort, 'GET', '/', withEncoding(accept, {}));
      const plain = await send(port, 'GET', '/proxy/all?userId=user-1', { authorization: CLIENT_KEY });
      const answer = await send(
        port,
        'GET',
        '/proxy/all?userId=user-1',
        withEncoding(accept, { authorization: CLIENT_KEY }),
      );
      expect(answer.status).toBe(200);
      expect(answer.headers['content-encoding']).toBe(expected.headers['content-encoding']);
      expect(answer.headers['content-length']).toBe(String(answer.raw.length));
      expect(answer.headers['vary']).toMatch(/^Accept-Encoding, /);
      expect(answer.headers['etag']).toBe(plain.headers['etag']);
      expect(decoded(answer)).toBe(plain.raw.toString('utf8'));
      expect(plain.raw.length).toBeGreaterThan(COMPRESSION_THRESHOLD);

      const flags = await send(
        port,
        'POST',
        '/ofrep/v1/evaluate/flags',
        withEncoding(accept, { authorization: CLIENT_KEY, 'content-type': 'application/json' }),
        JSON.stringify({ context: { targetingKey: 'user-2' } }),
      );
      expect(flags.status).toBe(200);
      expect(flags.headers['content-encoding']).toBe(expected.headers['content-encoding']);
      expect(flags.headers['content-length']).toBe(String(flags.raw.length));
      expect(flags.headers['vary']).toMatch(/^Accept-Encoding, /);
      const body = JSON.parse(decoded(flags)) as { flags: { key: string; value: boolean }[] };
      expect(body.flags).toHaveLength(60);
      expect(body.flags.filter((f) => f.value).map((f) => Number(f.key.slice(-2)) % 3)).toEqual(
        Array.from({ length: 20 }, () => 2),
      );
    },
  );

  test('a kept answer (a repeated context) is compressed for each request the same way', async () => {
    const headers = { authorization: CLIENT_KEY, 'accept-encoding': 'br' };
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await send(port, 'GET', '/proxy?userId=user-0', headers));
    for (const a of answers) {
      expect(a.headers['content-encoding']).toBe('br');
      expect(JSON.parse(decoded(a))).toEqual(JSON.parse(decoded(answers[0])));
    }
    const enabled = (JSON.parse(decoded(answers[0])) as { toggles: { name: string }[] }).toggles;
    expect(enabled).toHaveLength(20);
  });

  test("a kept answer's compressed bytes are made once per encoding and served to every client asking for it", async () => {
    const brotli = jest.spyOn(zlib, 'brotliCompressSync');
    const gzip = jest.spyOn(zlib, 'gzipSync');
    try {
      const path = '/proxy/all?userId=user-2&appName=kept-forms';
      const plain = await send(port, 'GET', path, { authorization: CLIENT_KEY });
      const order = ['br', 'gzip', 'br', 'identity', 'gzip', 'br', 'br'];
      const answers: Answer[] = [];
      for (const accept of order)
        answers.push(await send(port, 'GET', path, { authorization: CLIENT_KEY, 'accept-encoding': accept }));
      for (const [i, answer] of answers.entries()) {
        expect(answer.headers['content-encoding']).toBe(order[i] === 'identity' ? undefined : order[i]);
        expect(decoded(answer)).toBe(plain.raw.toString('utf8'));
      }
      // kept from the second sighting (the plain request was the first): each encoding compressed once
      expect(brotli).toHaveBeenCalledTimes(1);
      expect(gzip).toHaveBeenCalledTimes(1);
      expect(answers[5].raw.equals(answers[0].raw)).toBe(true);
    } finally {
      brotli.mockRestore();
      gzip.mockRestore();
    }
  });

  test('a body under the threshold is sent as it is, still naming Accept-Encoding in Vary', async () => {
    const answer = await send(port, 'GET', '/proxy?userId=nobody', {
      authorization: CLIENT_KEY,
      'accept-encoding': 'gzip, br',
    });
    expect(answer.status).toBe(200);
    expect(answer.raw.length).toBeLessThan(COMPRESSION_THRESHOLD);
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(answer.headers['vary']).toMatch(/^Accept-Encoding, /);
    expect(JSON.parse(answer.raw.toString('utf8'))).toEqual({ toggles: [] });
  });

  test('a 304 carries no body and no Content-Encoding', async () => {
    const first = await send(port, 'GET', '/proxy/all?userId=user-1', {
      authorization: CLIENT_KEY,
      'accept-encoding': 'gzip',
    });
    const again = await send(port, 'GET', '/proxy/all?userId=user-1', {
      authorization: CLIENT_KEY,
      'accept-encoding': 'gzip',
      'if-none-match': String(first.headers['etag']),
    });
    expect(again.status).toBe(304);
    expect(again.raw).toHaveLength(0);
    expect(again.headers['content-encoding']).toBeUndefined();
  });
});
