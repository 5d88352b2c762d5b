import { brotliCompressSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { startFlagServer, type RunningFlagServer } from '../../src/server';
import { ADMIN_TOKEN, CLIENT_TOKEN, TOKENS, backends, useTestServer } from './helpers/backends';
import { captureLogger } from './helpers/capture-logger';
import { freshPgliteDir } from '../support/pglite';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectValidationError(res: request.Response, message: RegExp): void {
  expect(res.status).toBe(400);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(res.body).toEqual({
    id: expect.stringMatching(UUID),
    name: 'ValidationError',
    message: expect.any(String),
  });
  expect(res.body.message).toMatch(message);
}

describe.each(backends())('client mistakes on flags-server ($name)', (backend) => {
  const logger = captureLogger();
  const server = useTestServer(backend, { logger });
  beforeEach(() => logger.lines.splice(0));
  afterEach(() => {
    // A client's mistake never reaches a log line above debug.
    expect(logger.lines.filter((l) => l.level !== 'debug' && l.level !== 'info')).toEqual([]);
  });

  it.each([
    ['/api/admin/roles/%ZZ', ADMIN_TOKEN],
    ['/api/admin/roles/%E0%A4%A', ADMIN_TOKEN],
    ['/api/client/features/%ZZ', CLIENT_TOKEN],
    ['/%ZZ', CLIENT_TOKEN],
  ])('answers 400 ValidationError to the bad percent-escape of GET %s', async (path, token) => {
    const res = await request(server().app).get(path).set('Authorization', token);
    expectValidationError(res, /percent-encoding/);
  });

  it('answers a metrics body of thousands of wrong counts with a short 400 naming the first 10 problems', async () => {
    const toggles = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`t${i}`, { yes: -1, no: 0 }]));
    const res = await request(server().app)
      .post('/api/client/metrics')
      .set('Authorization', CLIENT_TOKEN)
      .send({ appName: 'a', instanceId: 'i', bucket: { start: 0, stop: 1, toggles } });
    expectValidationError(res, /^Request body is not valid: bucket\.toggles\.t0\.yes: /);
    expect(res.body.message).toMatch(/bucket\.toggles\.t9\.yes: [^;]+; … and 4990 more problems$/);
    expect(res.text.length).toBeLessThan(2000);
  });

  it.each([
    ['gzip', Buffer.from('this is not gzip')],
    ['gzip', gzipSync(Buffer.from('{"appName": "a", "instanceId": "i", "bucket": {')).subarray(0, 20)],
    ['deflate', Buffer.from('this is not deflate')],
    ['br', Buffer.from('this is not brotli at all')],
    ['br', brotliCompressSync(Buffer.from('{"appName": "a"}')).subarray(0, 4)],
  ])('answers 400 ValidationError to a broken %s request body', async (encoding, body) => {
    const res = await request(server().app)
      .post('/api/client/metrics')
      .set('Authorization', CLIENT_TOKEN)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', encoding)
      .send(body);
    expectValidationError(res, new RegExp(`Request body is not valid "${encoding}" data`));
  });
});

describe('error-level lines caused by requests on flags-server', () => {
  const logger = captureLogger();
  let running: RunningFlagServer;
  // PGlite in a copy of the initdb'd template, not 'memory' (initdb, seconds of CPU, at each start)
  let database: Awaited<ReturnType<typeof freshPgliteDir>> | undefined;
  beforeAll(async () => {
    database = await freshPgliteDir();
    running = await startFlagServer(
      { ...TOKENS, dataDir: database.dataDir, port: 0, logger, featuresWatchInterval: 0 },
      {},
      { handleSignals: false },
    );
  }, 120_000);
  afterAll(async () => {
    await running?.close();
    await database?.remove();
  });

  it('are rate-limited: a fault that repeats on every request logs one error line, the others at debug with their error id', async () => {
    // A real server fault: the table a role read needs is gone.
    await running.flagServer.db.exec('DROP TABLE role_permissions');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await request(running.flagServer.app)
        .get('/api/admin/roles/1')
        .set('Authorization', ADMIN_TOKEN);
      expect(res.status).toBe(500);
      ids.push(res.body.id as string);
    }
    const errors = logger.at('error').filter((l) => l.msg.startsWith('request failed'));
    expect(errors).toHaveLength(1);
    expect(errors[0].fields?.errorId).toBe(ids[0]);
    const debug = logger.at('debug').filter((l) => l.msg.startsWith('request failed'));
    expect(debug.map((l) => l.fields?.errorId)).toEqual(ids.slice(1));
  });
});
