import request from 'supertest';
import { roleNameKey } from '../../src/server/roles/name-key';
import { ADMIN_TOKEN, backends, testServer, useTestServer } from './helpers/backends';
import { captureLogger } from './helpers/capture-logger';

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
  [
    'Cyrillic letters (confusable skeleton)',
    'Rollout manager',
    ['R\u043Ell\u043Eut manager', 'Rollout m\u0430n\u0430g\u0435r', 'ROLLOUT MANAGER'],
  ],
  [
    'Greek letters, capitals included (confusable skeleton)',
    'Pilot',
    ['\u03A1ilot', 'PIL\u039FT', 'Pil\u03BFt', '\u03A1\u0399\u039B\u039F\u03A4'.replace('\u039B', 'L')],
  ],
  [
    'Latin look-alikes (rn for m, 1 for l, O for 0)',
    'Team lead 0',
    ['Tearn lead 0', 'Team 1ead 0', 'Team lead O', 'TEAM LEAD 0'],
  ],
  [
    'full-width and mathematical letters mixed with Cyrillic',
    'Auditor two',
    ['\uFF21uditor two', '\u{1D400}uditor tw\u043E', '\u0410UDIT\u041ER TW\u041E'],
  ],
];

/** Look-alikes of the built-in roles: Cyrillic, Greek, full-width, mathematical letters. */
const BUILT_IN_ALIKES: Array<[string, string, string]> = [
  ['Admin', 'Cyrillic А', '\u0410dmin'],
  ['Admin', 'Greek Α, all capitals', '\u0391DMIN'],
  ['Admin', 'full-width', '\uFF21\uFF44\uFF4D\uFF49\uFF4E'],
  ['Admin', 'mathematical bold A and Cyrillic а', '\u{1D400}dmin'],
  ['Viewer', 'Cyrillic е twice', 'Vi\u0435w\u0435r'],
  ['Viewer', 'Greek ν', '\u03BDiewer'],
  ['Editor', 'Greek capital Ε (its small ε looks like no e)', '\u0395DITOR'],
  ['Editor', 'Cyrillic Е and о', '\u0415dit\u043Er'],
  ['Owner', 'Cyrillic О', '\u041Ewner'],
  ['Owner', 'the digit 0', '0wner'],
  ['Member', 'Cyrillic capital М (its small м looks like no m)', '\u041Cember'],
  ['Member', 'rn for m', 'rnember'],
];

/** Names that show nothing: each a 400 naming `name`. */
const INVISIBLE_NAMES: Array<[string, string]> = [
  ['U+3164 HANGUL FILLER', '\u3164'],
  ['U+115F HANGUL CHOSEONG FILLER', '\u115F'],
  ['U+1160 HANGUL JUNGSEONG FILLER', '\u1160'],
  ['U+FFA0 HALFWIDTH HANGUL FILLER', '\uFFA0'],
  ['several fillers and blanks', '\u3164 \u3164\u00A0\uFFA0'],
  ['a variation selector', '\uFE0F'],
  ['the combining grapheme joiner', '\u034F'],
  ['the braille blank', '\u2800\u2800'],
  ['U+200B ZERO WIDTH SPACE', '\u200B'],
  ['U+200F RIGHT-TO-LEFT MARK', '\u200F'],
  ['U+2060 WORD JOINER', '\u2060'],
  ['U+FEFF ZERO WIDTH NO-BREAK SPACE', '\uFEFF'],
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

  it.each(BUILT_IN_ALIKES)(
    'a look-alike of the built-in %s through %s is a 409 NameExistsError naming it',
    async (builtIn, _through, alike) => {
      const res = await post(alike);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'NameExistsError',
        message: expect.any(String),
      });
      expect(res.body.message).toMatch(new RegExp(`as role "${builtIn}" \\(id [1-5]\\)`));
    },
  );

  it.each(INVISIBLE_NAMES)(
    'a name of only %s is a 400 ValidationError naming name, and creates no role',
    async (_what, name) => {
      const before = await request(server().app).get('/api/admin/roles').set('Authorization', ADMIN_TOKEN);
      const res = await post(name);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name: 'ValidationError',
        message: expect.any(String),
      });
      expect(res.body.message).toMatch(/^Request body is not valid: name: /);
      const after = await request(server().app).get('/api/admin/roles').set('Authorization', ADMIN_TOKEN);
      expect(after.body.roles).toEqual(before.body.roles);
    },
  );

  it('accepts names in other scripts that look like no other name, and refuses their case variants and look-alikes', async () => {
    for (const name of [
      'Разработчик',
      'Администратор',
      'Διαχειριστής',
      '管理者',
      '開発者',
      'ﾃｽﾄ係',
      'Entwickler*in',
    ]) {
      const res = await post(name);
      expect({ name, status: res.status }).toEqual({ name, status: 200 });
      expect(res.body.roles.name).toBe(name.trim());
    }
    // The same name in capitals; with a Latin a in it; half-width katakana is the full-width one.
    expect((await post('РАЗРАБОТЧИК')).status).toBe(409);
    expect((await post('Р\u0061зработчик')).status).toBe(409);
    expect((await post('テスト係')).status).toBe(409);
  });

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
    // The backend's PGlite is persisted in a folder, so the database outlives its first server.
    const options = await backend.options();
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
    }
  }, 120_000); // two PGlite starts on a persisted folder
});

describe.each(backends())('upgrading to confusable-skeleton keys (migration 005) on $name', (backend) => {
  it('recomputes every key at start: a look-alike stored under the older keys loses its keys with a warning, other roles keep working', async () => {
    const options = await backend.options();
    const first = await testServer(backend, options);
    try {
      // The database as a server before migration 005 left it: keys without the skeleton.
      await first.db.exec(`
        DROP INDEX roles_name_key_cased_unique;
        ALTER TABLE roles DROP COLUMN name_key_cased;
        UPDATE roles SET name_key = lower(name) WHERE built_in;
        DELETE FROM migrations WHERE name = '005_role_name_skeletons.sql';
        INSERT INTO roles (name, name_key, description, type) VALUES
          ('Vi\u0435w\u0435r', lower('Vi\u0435w\u0435r'), '', 'root-custom'),
          ('Разработчик', lower('Разработчик'), '', 'custom');
      `);
    } finally {
      await first.close();
    }
    const logger = captureLogger();
    const second = await testServer(backend, { ...options, logger });
    try {
      expect(logger.at('warn')).toEqual([
        {
          level: 'warn',
          msg: 'a role name looks like the name of an older role; it cannot be found by name',
          fields: { role: 'Vi\u0435w\u0435r' },
        },
      ]);
      expect(await second.stores.roles.fillNameKeys()).toEqual(['Vi\u0435w\u0435r']);
      const post = (name: string) =>
        request(second.app)
          .post('/api/admin/roles')
          .set('Authorization', ADMIN_TOKEN)
          .send({ name, type: 'custom' });
      const viewer = await post('Vi\u0435wer');
      expect(viewer.status).toBe(409);
      expect(viewer.body.message).toContain('as role "Viewer" (id 3)');
      const upper = await post('РАЗРАБОТЧИК');
      expect(upper.status).toBe(409);
      expect(upper.body.message).toContain('as role "Разработчик"');
      expect((await post('Tester')).status).toBe(200);
    } finally {
      await second.close();
      await backend.cleanup();
    }
  }, 120_000); // two PGlite starts on a persisted folder
});
