import request from 'supertest';
import {
  ADMIN_TOKEN,
  CLIENT_TOKEN,
  EDITOR_TOKEN,
  VIEWER_TOKEN,
  backends,
  useTestServer,
} from './helpers/backends';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function expectError(res: request.Response, status: number, name: string, message?: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(Object.keys(res.body as object).sort()).toEqual(['id', 'message', 'name']);
  expect(res.body.id).toMatch(UUID);
  expect(res.body.name).toBe(name);
  expect(typeof res.body.message).toBe('string');
  if (message) expect(res.body.message).toMatch(message);
}

describe.each(backends())('POST /api/admin/roles on $name', (backend) => {
  const server = useTestServer(backend);

  const post = (body: unknown, token: string | null = ADMIN_TOKEN) => {
    const req = request(server().app).post('/api/admin/roles').set('Accept', 'application/json');
    if (token !== null) req.set('Authorization', token);
    return req.send(body as object);
  };

  it('answers 200 with the version and the created root-custom role, project null', async () => {
    const res = await post({
      name: 'Segment manager',
      description: 'Manages segments',
      type: 'root-custom',
      permissions: [{ name: 'CREATE_SEGMENT' }, { name: 'UPDATE_SEGMENT', environment: '' }],
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      version: 1,
      roles: {
        id: expect.any(Number),
        type: 'root-custom',
        name: 'Segment manager',
        description: 'Manages segments',
        project: null,
      },
    });
    expect(res.body.roles.id).toBeGreaterThan(5);
    expect(await server().stores.roles.permissionsOf(res.body.roles.id)).toEqual([
      { name: 'CREATE_SEGMENT' },
      { name: 'UPDATE_SEGMENT' },
    ]);
  });

  it('creates a custom role with project and environment permissions and stores duplicates once', async () => {
    const res = await post({
      name: 'Developer',
      description: 'Develops in development',
      type: 'custom',
      permissions: [
        { name: 'CREATE_FEATURE', environment: 'development' },
        { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'development' },
        { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'development' },
        { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'production' },
        { name: 'CREATE_FEATURE' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.roles).toMatchObject({ type: 'custom', name: 'Developer', project: null });
    const read = await request(server().app)
      .get(`/api/admin/roles/${res.body.roles.id}`)
      .set('Authorization', ADMIN_TOKEN);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      ...res.body.roles,
      permissions: [
        { name: 'CREATE_FEATURE' },
        { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'development' },
        { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'production' },
      ],
    });
  });

  it('defaults type to custom and description to an empty string, trimming the name', async () => {
    const res = await post({ name: '  Reader  ' });
    expect(res.status).toBe(200);
    expect(res.body.roles).toEqual({
      id: expect.any(Number),
      type: 'custom',
      name: 'Reader',
      description: '',
      project: null,
    });
  });

  it('accepts "Bearer <token>" as well as the bare token', async () => {
    const res = await post({ name: 'Bearer role' }, `Bearer ${ADMIN_TOKEN}`);
    expect(res.status).toBe(200);
  });

  it('answers 400 ValidationError naming name when it is missing or empty', async () => {
    expectError(await post({ type: 'custom', permissions: [] }), 400, 'ValidationError', /\bname\b/);
    expectError(await post({ name: '   ' }), 400, 'ValidationError', /name: must be a non-empty string/);
    expectError(await post({ name: 42 }), 400, 'ValidationError', /name/);
  });

  it('answers 400 ValidationError naming the field for a NUL character anywhere, and stores nothing', async () => {
    expectError(
      await post({ name: 'Nul\u0000role' }),
      400,
      'ValidationError',
      /name: must not contain the NUL/,
    );
    expectError(await post({ name: '\u0000' }), 400, 'ValidationError', /name: must not contain the NUL/);
    expectError(
      await post({ name: 'Nul description', description: 'a\u0000b' }),
      400,
      'ValidationError',
      /description: must not contain the NUL/,
    );
    expectError(
      await post({ name: 'Nul env', permissions: [{ name: 'UPDATE_FEATURE', environment: 'dev\u0000' }] }),
      400,
      'ValidationError',
      /permissions\[0\]\.environment: must not contain the NUL/,
    );
    const list = await request(server().app).get('/api/admin/roles').set('Authorization', ADMIN_TOKEN);
    expect(JSON.stringify(list.body)).not.toMatch(/Nul/);
  });

  it.each([
    ['a zero-width space (the fake "Admin")', 'Admin\u200B', 'U+200B'],
    ['a left-to-right mark', 'Admin\u200E', 'U+200E'],
    ['a right-to-left override', 'nimdA\u202E', 'U+202E'],
    ['a left-to-right isolate', '\u2066Admin', 'U+2066'],
    ['a pop directional isolate', 'Ad\u2069min', 'U+2069'],
    ['a zero-width no-break space inside', 'Ad\uFEFFmin', 'U+FEFF'],
    ['a zero-width joiner', 'Ad\u200Dmin', 'U+200D'],
    ['a word joiner', 'Ad\u2060min', 'U+2060'],
    ['a soft hyphen', 'Ad\u00ADmin', 'U+00AD'],
    ['a newline inside', 'Ad\nmin', 'U+000A'],
    ['an escape character', 'Ad\u001Bmin', 'U+001B'],
    ['a DEL character', 'Ad\u007Fmin', 'U+007F'],
    ['a C1 control', 'Ad\u0085min', 'U+0085'],
    ['a line separator', 'Ad\u2028min', 'U+2028'],
    ['a lone surrogate', 'Ad\uD800min', 'U+D800'],
  ])('answers 400 ValidationError naming name for %s, and creates no role', async (_what, name, code) => {
    const res = await post({ name, type: 'root-custom', permissions: [] });
    expectError(
      res,
      400,
      'ValidationError',
      /name: must not contain control, format, zero-width or bidi characters/,
    );
    expect(res.body.message).toContain(code);
    const list = await request(server().app).get('/api/admin/roles').set('Authorization', ADMIN_TOKEN);
    expect((list.body as { roles: Array<{ name: string }> }).roles.map((r) => r.name)).not.toContain(
      name.trim(),
    );
  });

  it('accepts letters of any script, emoji and inner spaces in a name, and control characters in the description', async () => {
    const res = await post({ name: 'Éditeur 编辑 🚀', description: 'line one\nline two\ttabbed' });
    expect(res.status).toBe(200);
    expect(res.body.roles).toMatchObject({
      name: 'Éditeur 编辑 🚀',
      description: 'line one\nline two\ttabbed',
    });
  });

  it('answers 400 ValidationError naming type when it is not root-custom or custom', async () => {
    expectError(
      await post({ name: 'Wrong type', type: 'root' }),
      400,
      'ValidationError',
      /type: must be "root-custom" or "custom"/,
    );
  });

  it('answers 400 ValidationError for a body that is not an object or not JSON', async () => {
    expectError(await post([1, 2]), 400, 'ValidationError', /JSON object/);
    const res = await request(server().app)
      .post('/api/admin/roles')
      .set('Authorization', ADMIN_TOKEN)
      .set('Content-Type', 'application/json')
      .send('{"name": ');
    expectError(res, 400, 'ValidationError', /not valid JSON/);
    expectError(await post({ name: 'P', permissions: 'ADMIN' }), 400, 'ValidationError', /permissions/);
    expectError(
      await post({ name: 'P', permissions: [{ environment: 'development' }] }),
      400,
      'ValidationError',
      /permissions\[0\]\.name/,
    );
  });

  it('answers 400 ValidationError naming an unknown permission', async () => {
    expectError(
      await post({
        name: 'Unknown perm',
        type: 'root-custom',
        permissions: [{ name: 'CREATE_SEGMENT' }, { name: 'FLY_TO_MOON' }],
      }),
      400,
      'ValidationError',
      /permissions\[1\]\.name: unknown permission "FLY_TO_MOON"/,
    );
  });

  it('answers 400 ValidationError for a permission of the wrong kind', async () => {
    expectError(
      await post({
        name: 'Wrong kind 1',
        type: 'root-custom',
        permissions: [{ name: 'CREATE_FEATURE', environment: 'development' }],
      }),
      400,
      'ValidationError',
      /CREATE_FEATURE is a project permission; a root-custom role takes only root permissions/,
    );
    expectError(
      await post({
        name: 'Wrong kind 2',
        type: 'custom',
        permissions: [{ name: 'CREATE_SEGMENT', environment: '' }],
      }),
      400,
      'ValidationError',
      /CREATE_SEGMENT is a root permission/,
    );
    expectError(
      await post({ name: 'Wrong kind 3', type: 'root-custom', permissions: [{ name: 'ADMIN' }] }),
      400,
      'ValidationError',
      /ADMIN cannot be given/,
    );
  });

  it('answers 400 ValidationError when an environment permission has no or an unknown environment', async () => {
    expectError(
      await post({ name: 'No env', type: 'custom', permissions: [{ name: 'UPDATE_FEATURE_STRATEGY' }] }),
      400,
      'ValidationError',
      /permissions\[0\]\.environment: UPDATE_FEATURE_STRATEGY is an environment permission and needs an environment/,
    );
    expectError(
      await post({
        name: 'Bad env',
        type: 'custom',
        permissions: [{ name: 'UPDATE_FEATURE_STRATEGY', environment: 'staging' }],
      }),
      400,
      'ValidationError',
      /environment "staging" of UPDATE_FEATURE_STRATEGY does not exist \(known: development, production\)/,
    );
    const roles = await server().stores.roles.list();
    expect(roles.map((r) => r.name)).not.toEqual(
      expect.arrayContaining(['No env', 'Bad env', 'Wrong kind 1', 'Unknown perm']),
    );
  });

  it('answers 401 AuthenticationRequired without a token or with an unknown token', async () => {
    expectError(
      await post({ name: 'No token' }, null),
      401,
      'AuthenticationRequired',
      /Authorization header/,
    );
    expectError(await post({ name: 'Bad token' }, 'not-a-token'), 401, 'AuthenticationRequired', /not valid/);
    expectError(await post({ name: 'Bad token' }, 'Bearer '), 401, 'AuthenticationRequired');
  });

  it('answers 403 NoAccessError naming ADMIN when the token role lacks it', async () => {
    expectError(
      await post({ name: 'By viewer' }, VIEWER_TOKEN),
      403,
      'NoAccessError',
      /permission ADMIN.*"Viewer"/,
    );
    expectError(
      await post({ name: 'By editor' }, EDITOR_TOKEN),
      403,
      'NoAccessError',
      /permission ADMIN.*"Editor"/,
    );
    expect(await server().stores.roles.getByName('By viewer')).toBeUndefined();
  });

  it('answers 403 NoAccessError for a client token', async () => {
    expectError(
      await post({ name: 'By client' }, CLIENT_TOKEN),
      403,
      'NoAccessError',
      /client token cannot be used on the admin API/,
    );
  });

  it('checks the token before the body: 401 and 403 even for an invalid body', async () => {
    expectError(await post('garbage', null), 401, 'AuthenticationRequired');
    expectError(await post({ name: '' }, VIEWER_TOKEN), 403, 'NoAccessError');
  });

  it('answers 415 ContentTypeError for a body that is not JSON', async () => {
    const res = await request(server().app)
      .post('/api/admin/roles')
      .set('Authorization', ADMIN_TOKEN)
      .type('text/plain')
      .send('name=x');
    expectError(res, 415, 'ContentTypeError', /application\/json/);
  });

  it('answers 409 NameExistsError for an existing name, compared trimmed and ignoring case, built-ins included', async () => {
    expect((await post({ name: 'Release manager' })).status).toBe(200);
    expectError(await post({ name: '  release MANAGER ' }), 409, 'NameExistsError', /release MANAGER/);
    expectError(await post({ name: 'admin' }), 409, 'NameExistsError');
    expectError(await post({ name: 'Viewer', type: 'root-custom' }), 409, 'NameExistsError');
    expectError(await post({ name: 'member' }), 409, 'NameExistsError');
    const same = (await server().stores.roles.list()).filter(
      (r) => r.name.toLowerCase() === 'release manager',
    );
    expect(same).toHaveLength(1);
  });

  it('gives exactly one 200 and 24 × 409 for 25 concurrent creates of one name', async () => {
    const responses = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        post({ name: i % 2 === 0 ? 'Concurrent role' : ' concurrent ROLE ', type: 'custom' }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(24);
    responses.filter((r) => r.status === 409).forEach((r) => expectError(r, 409, 'NameExistsError'));
    const rows = await server().db.query<{ n: number | string }>(
      "SELECT count(*) AS n FROM roles WHERE lower(btrim(name)) = 'concurrent role'",
    );
    expect(Number(rows[0].n)).toBe(1);
  });
});

describe.each(backends())('reading roles and permissions on $name', (backend) => {
  const server = useTestServer(backend, { environments: ['development', 'staging', 'production'] });

  it('lists the built-in roles with GET /api/admin/roles for any admin token', async () => {
    const res = await request(server().app).get('/api/admin/roles').set('Authorization', VIEWER_TOKEN);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      version: 1,
      roles: [
        { id: 1, type: 'root', name: 'Admin', description: expect.any(String), project: null },
        { id: 2, type: 'root', name: 'Editor', description: expect.any(String), project: null },
        { id: 3, type: 'root', name: 'Viewer', description: expect.any(String), project: null },
        { id: 4, type: 'project', name: 'Owner', description: expect.any(String), project: null },
        { id: 5, type: 'project', name: 'Member', description: expect.any(String), project: null },
      ],
    });
  });

  it('reads one role with its permissions, 404 NotFoundError for an unknown id, 400 for a malformed one', async () => {
    const admin = await request(server().app).get('/api/admin/roles/1').set('Authorization', ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(admin.body).toMatchObject({ id: 1, name: 'Admin', permissions: [{ name: 'ADMIN' }] });
    const missing = await request(server().app).get('/api/admin/roles/999').set('Authorization', ADMIN_TOKEN);
    expectError(missing, 404, 'NotFoundError', /999/);
    const malformed = await request(server().app)
      .get('/api/admin/roles/abc')
      .set('Authorization', ADMIN_TOKEN);
    expectError(malformed, 400, 'ValidationError', /"id"/);
  });

  it('serves the permission catalogue with the configured environments', async () => {
    const res = await request(server().app).get('/api/admin/permissions').set('Authorization', ADMIN_TOKEN);
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(1);
    expect(res.body.permissions.root).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'CREATE_SEGMENT' })]),
    );
    expect(res.body.permissions.project).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'CREATE_FEATURE' })]),
    );
    expect(res.body.permissions.environments.map((e: { name: string }) => e.name)).toEqual([
      'development',
      'staging',
      'production',
    ]);
  });

  it('accepts an environment permission for a configured extra environment', async () => {
    const res = await request(server().app)
      .post('/api/admin/roles')
      .set('Authorization', ADMIN_TOKEN)
      .send({
        name: 'Stager',
        permissions: [{ name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'staging' }],
      });
    expect(res.status).toBe(200);
    expect(await server().stores.roles.permissionsOf(res.body.roles.id)).toEqual([
      { name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'staging' },
    ]);
  });

  it('answers 404 NotFoundError in the standard body for unknown admin paths', async () => {
    const res = await request(server().app).get('/api/admin/nothing').set('Authorization', ADMIN_TOKEN);
    expectError(res, 404, 'NotFoundError');
  });
});
