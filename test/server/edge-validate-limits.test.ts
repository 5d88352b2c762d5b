import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { ADMIN_TOKEN, backends, useTestServer } from './helpers/backends';
import { captureLogger } from './helpers/capture-logger';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const FRONTEND = '*:development.frontend-secret-1';
/** Unleash's body limit, Express's default `100kb`. */
const LIMIT = 100 * 1024;

/** `count` distinct guesses of `length` characters each. */
const guesses = (count: number, length: number) =>
  Array.from({ length: count }, (_, i) => `*:development.${String(i).padStart(length - 14, '0')}`);

/** Sends `body` chunked (no Content-Length), over a real socket to the listening server. */
function postChunked(port: number, body: string, chunk = 8192): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/edge/validate',
        headers: { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString('utf8')) }),
        );
        res.on('error', reject);
      },
    );
    // The server may answer 413 and stop reading before every chunk is written.
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') reject(err);
    });
    for (let i = 0; i < body.length; i += chunk) req.write(body.slice(i, i + chunk));
    req.end();
  });
}

describe.each(backends())('limits of POST /edge/validate on $name', (backend) => {
  const logger = captureLogger();
  const server = useTestServer(backend, { logger, frontendTokens: [FRONTEND] });
  beforeEach(() => logger.lines.splice(0));
  afterEach(() => {
    // A client's mistake never reaches a log line above info.
    expect(logger.lines.filter((l) => l.level !== 'debug' && l.level !== 'info')).toEqual([]);
  });

  const validate = (body: string, authorization?: string) => {
    const req = request(server().app).post('/edge/validate').set('Content-Type', 'application/json');
    if (authorization !== undefined) req.set('Authorization', authorization);
    return req.send(body);
  };

  it('answers 250 tokens in one request, the valid one among them', async () => {
    const tokens = [...guesses(249, 60), FRONTEND];
    const res = await validate(JSON.stringify({ tokens }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      tokens: [{ token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'] }],
    });
  });

  it('refuses 251 tokens with a 400 ValidationError naming the limit of 250, also for an admin caller', async () => {
    for (const authorization of [undefined, ADMIN_TOKEN]) {
      const res = await validate(JSON.stringify({ tokens: [...guesses(250, 60), FRONTEND] }), authorization);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'ValidationError',
        message: expect.any(String),
      });
      expect(res.body.message).toMatch(/tokens: must hold at most 250 tokens per request/);
    }
  });

  it('answers a body of thousands of wrong elements with one short 400: the count is checked first, at most 10 problems are named', async () => {
    // 100 KiB of numbers: about 50,000 elements, none a string.
    const many = `{"tokens":[${Array.from({ length: (LIMIT - 20) / 2 }, () => '1').join(',')}]}`;
    expect(many.length).toBeLessThanOrEqual(LIMIT);
    const res = await validate(many);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(
      'Request body is not valid: tokens: must hold at most 250 tokens per request (send more in several requests)',
    );
    // 250 wrong elements: each is a problem, the answer names 10 and counts the others.
    const wrong = await validate(JSON.stringify({ tokens: Array.from({ length: 250 }, (_, i) => i) }));
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toMatch(
      /^Request body is not valid: tokens\[0\]: each token must be a string; /,
    );
    expect(wrong.body.message).toContain('tokens[9]: each token must be a string; … and 240 more problems');
    expect(wrong.text.length).toBeLessThan(1000);
  });

  it('takes a body of exactly 100 KiB, and answers 413 PayloadTooLarge to one byte more', async () => {
    // 250 tokens of 400 characters: just under the limit, then padded with blanks to exactly it.
    const tokens = [...guesses(249, 400), FRONTEND];
    const json = JSON.stringify({ tokens });
    expect(json.length).toBeLessThan(LIMIT);
    const exact = json.padEnd(LIMIT, ' ');
    const ok = await validate(exact);
    expect(ok.status).toBe(200);
    expect(ok.body.tokens).toHaveLength(1);

    const over = await validate(`${exact} `);
    expect(over.status).toBe(413);
    expect(over.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'PayloadTooLarge',
      message: `Request body is larger than the limit of ${LIMIT} bytes`,
    });
  });

  it('answers 413 to a larger chunked body (no Content-Length: counted as it arrives), and keeps serving', async () => {
    const listening = server().app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => listening.once('listening', resolve));
    try {
      const { port } = listening.address() as AddressInfo;
      // 1,000 tokens in 400 KB: over both limits; the body limit is met first.
      const big = await postChunked(port, JSON.stringify({ tokens: guesses(1000, 400) }));
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ name: 'PayloadTooLarge' });
      const small = await postChunked(port, JSON.stringify({ tokens: [FRONTEND] }));
      expect(small).toEqual({
        status: 200,
        body: {
          tokens: [{ token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'] }],
        },
      });
    } finally {
      await new Promise((resolve) => listening.close(resolve));
    }
  });
});
