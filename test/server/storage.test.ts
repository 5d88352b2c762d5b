import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { silentLogger } from '../../src/common/logging/logger';
import { createFlagServer } from '../../src/server';
import { migrate } from '../../src/server/storage/migrate';
import { ADMIN_TOKEN, CLIENT_TOKEN, TOKENS, backends, testServer, useTestServer } from './helpers/backends';

describe('the embedded database in a data directory', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'flags-data-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps a created role across a restart of the server on the same data directory', async () => {
    const options = { ...TOKENS, dataDir: dir, featuresWatchInterval: 0, logger: silentLogger };
    const first = await createFlagServer(options, {});
    const created = await request(first.app)
      .post('/api/admin/roles')
      .set('Authorization', ADMIN_TOKEN)
      .send({
        name: 'Survivor',
        description: 'outlives restarts',
        type: 'root-custom',
        permissions: [{ name: 'CREATE_PROJECT' }],
      });
    expect(created.status).toBe(200);
    await first.close();

    const second = await createFlagServer(options, {});
    try {
      const read = await request(second.app)
        .get(`/api/admin/roles/${created.body.roles.id}`)
        .set('Authorization', ADMIN_TOKEN);
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ ...created.body.roles, permissions: [{ name: 'CREATE_PROJECT' }] });
      const again = await request(second.app)
        .post('/api/admin/roles')
        .set('Authorization', ADMIN_TOKEN)
        .send({ name: 'survivor' });
      expect(again.status).toBe(409);
      const migrations = await second.db.query<{ name: string }>('SELECT name FROM migrations ORDER BY name');
      expect(migrations.map((m) => m.name)).toEqual([
        '001_roles_and_tokens.sql',
        '002_client_applications.sql',
        '003_role_name_keys.sql',
        '004_token_scopes.sql',
        '005_role_name_skeletons.sql',
      ]);
    } finally {
      await second.close();
    }
  }, 120_000); // two PGlite starts on a persisted folder
});

describe.each(backends())('storage on $name', (backend) => {
  const server = useTestServer(backend);

  it('runs migrations only once, so running them again applies nothing', async () => {
    expect(await migrate(server().db, silentLogger)).toEqual([]);
  });

  it('stores tokens as sha256 hashes, never the secrets', async () => {
    const rows = await server().db.query<{ secret_hash: string; type: string; role_id: number | null }>(
      'SELECT secret_hash, type, role_id FROM api_tokens ORDER BY type, role_id',
    );
    expect(rows).toHaveLength(4);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.secret_hash))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain(ADMIN_TOKEN);
    expect(rows.map((r) => [r.type, r.role_id === null ? null : Number(r.role_id)])).toEqual([
      ['admin', 1],
      ['admin', 2],
      ['admin', 3],
      ['client', null],
    ]);
  });
});

describe.each(backends())('a server on $name whose database goes away', (backend) => {
  it('answers 503 NotReady instead of crashing', async () => {
    const server = await testServer(backend);
    try {
      await server.db.close();
      const health = await request(server.app).get('/health');
      expect(health.status).toBe(503);
      expect(health.body).toEqual({
        id: expect.any(String),
        name: 'NotReady',
        message: expect.stringMatching(/database/),
      });
      const roles = await request(server.app)
        .post('/api/admin/roles')
        .set('Authorization', ADMIN_TOKEN)
        .send({ name: 'x' });
      expect(roles.status).toBe(503);
      expect(roles.body.name).toBe('NotReady');
      const client = await request(server.app).get('/api/client/features').set('Authorization', CLIENT_TOKEN);
      expect(client.status).toBe(503);
    } finally {
      await server.close();
      await backend.cleanup();
    }
  });
});

// Needs a real PostgreSQL to kill connections on (pg_terminate_backend); .ci/run always sets TEST_DATABASE_URL, so CI runs it.
const pgUrl = process.env.TEST_DATABASE_URL;
(pgUrl ? describe : describe.skip)('a server on PostgreSQL whose connections are killed', () => {
  it('survives the lost connections and answers again once PostgreSQL is back', async () => {
    const backend = backends()[1];
    const options = await backend.options();
    const server = await createFlagServer(
      { ...TOKENS, ...options, featuresWatchInterval: 0, logger: silentLogger },
      {},
    );
    const admin = new Client({ connectionString: pgUrl });
    await admin.connect();
    try {
      expect((await request(server.app).get('/health')).status).toBe(200);
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [`flags-server/${options.databaseSchema}`],
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) statuses.push((await request(server.app).get('/health')).status);
      expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
      expect(statuses[statuses.length - 1]).toBe(200);
    } finally {
      await admin.end();
      await server.close();
      await backend.cleanup();
    }
  });
});
