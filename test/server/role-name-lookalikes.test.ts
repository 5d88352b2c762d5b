import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { roleNameKey } from '../../src/server/roles/name-key';
import { ADMIN_TOKEN, backends, testServer, useTestServer } from './helpers/backends';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Each family: a name, then names that look the same and must not become a second role. */
const FAMILIES: Array<[string, string, string[]]> = [
  ['variation selectors', 'Auditor', ['Audi\uFE0Ftor', 'Auditor\uFE00', 'A\u{E0100}uditor']],
  ['the combining grapheme joiner', 'Reviewer', ['Rev\u034Fiewer', 'Reviewer\u034F']],
  [
    'Hangul fillers',
    'Publisher',
    ['Pub\u115Flisher', 'Pub\u1160lisher', 'Publisher\u3164', 'Pub\uFFA0lisher'],
  ],
  ['the braille blank', 'Release manager', ['Release\u2800manager', '\u2800Release manager']],
  [
    'non-ASCII spaces and runs of spaces',
    'Support lead',
    ['Support\u00A0lead', 'Support\u3000lead', 'Support\u2003lead', 'Support   lead', 'Support \u00A0 lead'],
  ],
  [
    'NFC and NFD spellings',
    'Caf\u00E9 owner',
    ['Cafe\u0301 owner', 'CAFE\u0301 OWNER', 'Cafe\u034F\u0301 owner'],
  ],
  ['compatibility forms (NFKC)', 'Ops', ['\uFF2F\uFF50\uFF53', 'O\uFF50s']],
];

describe.each(backends())('role names compared as they look on $name', (backend) => {
  const server = useTestServer(backend);

  const post = (name: string) =>
    request(server().app)
      .post('/api/admin/roles')
      .set('Authorization', ADMIN_TOKEN)
      .send({ name, type: 'root-custom', permissions: [{ name: 'READ_ROLE' }] });

  it.each(FAMILIES)(
    'a look-alike through %s cannot create a second role (409 naming the first)',
    async (_family, name, alikes) => {
      const first = await post(name);
      expect(first.status).toBe(200);
      for (const alike of alikes) {
        const res = await post(alike);
        expect({ alike: [...alike].map((c) => c.codePointAt(0)?.toString(16)), status: res.status }).toEqual({
          alike: [...alike].map((c) => c.codePointAt(0)?.toString(16)),
          status: 409,
        });
        expect(res.body).toEqual({
          id: expect.stringMatching(UUID),
          name: 'NameExistsError',
          message: expect.any(String),
        });
        expect(res.body.message).toContain(`as role "${name}" (id ${first.body.roles.id})`);
      }
      const roles = await request(server().app).get('/api/admin/roles').set('Authorization', ADMIN_TOKEN);
      const same = (roles.body.roles as Array<{ name: string }>).filter(
        (r) => roleNameKey(r.name) === roleNameKey(name),
      );
      expect(same.map((r) => r.name)).toEqual([name]);
    },
  );

  it('a look-alike of a built-in role is refused too, while names that differ in more than looks stay distinct', async () => {
    expect((await post('Ad\uFE0Fmin')).status).toBe(409);
    expect((await post('View\u034Fer')).status).toBe(409);
    expect((await post('Data steward')).status).toBe(200);
    expect((await post('Data stewards')).status).toBe(200);
    expect((await post('Datasteward')).status).toBe(200);
  });
});

describe.each(backends())('role name keys of roles stored before the rule on $name', (backend) => {
  it('are filled at start, so a look-alike of an older role is refused (the later of two stored look-alikes gets none)', async () => {
    // PGlite persisted in a folder, so the database outlives its first server.
    const dir = mkdtempSync(path.join(tmpdir(), 'flags-roles-'));
    const options = backend.name === 'PGlite' ? { dataDir: dir } : await backend.options();
    const first = await testServer(backend, options);
    try {
      await first.db.query(
        "INSERT INTO roles (name, description, type) VALUES ('Legacy role', '', 'root-custom'), ('Legacy\u00A0role', '', 'root-custom')",
      );
    } finally {
      await first.close();
    }
    const second = await testServer(backend, options);
    try {
      // The later of two look-alikes stored before the rule keeps no key: the older role keeps the name.
      expect(await second.stores.roles.fillNameKeys()).toEqual(['Legacy\u00A0role']);
      const res = await request(second.app)
        .post('/api/admin/roles')
        .set('Authorization', ADMIN_TOKEN)
        .send({ name: 'legacy\u3000ROLE', type: 'root-custom' });
      expect(res.status).toBe(409);
      expect(res.body.message).toContain('as role "Legacy role"');
    } finally {
      await second.close();
      await backend.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000); // two PGlite starts on a persisted folder
});
