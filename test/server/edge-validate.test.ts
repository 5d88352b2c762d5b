import request from 'supertest';
import { ADMIN_TOKEN, CLIENT_TOKEN, VIEWER_TOKEN, backends, useTestServer } from './helpers/backends';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SCOPED_CLIENT = 'shop:production.client-secret-1';
const FRONTEND = '*:development.frontend-secret-1';

function expectError(res: request.Response, status: number, name: string, message?: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({ id: expect.stringMatching(UUID), name, message: expect.any(String) });
  if (message) expect(res.body.message).toMatch(message);
}

describe.each(backends())('POST /edge/validate and API tokens on $name', (backend) => {
  const server = useTestServer(backend, {
    clientTokens: [CLIENT_TOKEN, SCOPED_CLIENT],
    frontendTokens: [FRONTEND],
  });

  const validate = (body: unknown, authorization?: string) => {
    const req = request(server().app).post('/edge/validate').set('Content-Type', 'application/json');
    if (authorization !== undefined) req.set('Authorization', authorization);
    return req.send(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const createToken = (body: unknown, token = ADMIN_TOKEN) =>
    request(server().app)
      .post('/api/admin/api-tokens')
      .set('Authorization', token)
      .send(body as object);

  it('lists the valid client and frontend tokens with type, environment and projects, leaving unknown ones out', async () => {
    const res = await validate({
      tokens: [
        FRONTEND,
        'nobody:development.unknown',
        SCOPED_CLIENT,
        CLIENT_TOKEN,
        FRONTEND,
        'plain-unknown',
      ],
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      tokens: [
        { token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'] },
        { token: SCOPED_CLIENT, type: 'client', environment: 'production', projects: ['shop'] },
        { token: CLIENT_TOKEN, type: 'client', projects: ['*'] },
      ],
    });
    // At the server's root only, as on Unleash, not under /api.
    const underApi = await request(server().app)
      .post('/api/edge/validate')
      .set('Content-Type', 'application/json')
      .send({ tokens: [FRONTEND] });
    expect(underApi.status).toBe(404);
  });

  it('issues a frontend token in Unleash format on the admin API, which /edge/validate confirms until it is revoked', async () => {
    const created = await createToken({
      type: 'frontend',
      environment: 'production',
      projects: ['shop', 'blog'],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      secret: expect.stringMatching(/^\[\]:production\.[0-9a-f]{64}$/),
      tokenName: null,
      type: 'frontend',
      environment: 'production',
      project: '[]',
      projects: ['shop', 'blog'],
      createdAt: expect.any(String),
    });
    const secret = created.body.secret as string;
    const one = await createToken({
      type: 'CLIENT',
      environment: 'development',
      project: 'shop',
      tokenName: 'sdk',
    });
    expect(one.status).toBe(201);
    expect(one.body).toMatchObject({ type: 'client', project: 'shop', projects: ['shop'], tokenName: 'sdk' });
    expect(one.body.secret).toMatch(/^shop:development\./);

    expect((await validate({ tokens: [secret, one.body.secret] })).body).toEqual({
      tokens: [
        { token: secret, type: 'frontend', environment: 'production', projects: ['shop', 'blog'] },
        { token: one.body.secret, type: 'client', environment: 'development', projects: ['shop'] },
      ],
    });
    // The new client token works on the client API; the frontend token does not (it is for the proxy).
    const features = await request(server().app)
      .get('/api/client/features')
      .set('Authorization', one.body.secret);
    expect(features.status).toBe(200);
    expectError(
      await request(server().app).get('/api/client/features').set('Authorization', secret),
      403,
      'NoAccessError',
      /frontend token/,
    );

    const revoked = await request(server().app)
      .delete(`/api/admin/api-tokens/${encodeURIComponent(secret)}`)
      .set('Authorization', ADMIN_TOKEN);
    expect(revoked.status).toBe(200);
    expect((await validate({ tokens: [secret, one.body.secret] })).body.tokens).toEqual([
      { token: one.body.secret, type: 'client', environment: 'development', projects: ['shop'] },
    ]);
    expectError(
      await request(server().app)
        .delete(`/api/admin/api-tokens/${encodeURIComponent(secret)}`)
        .set('Authorization', ADMIN_TOKEN),
      404,
      'NotFoundError',
    );
  });

  it("serves a client token of one project only that project's toggles, with its own ETag", async () => {
    const read = (token: string) =>
      request(server().app).get('/api/client/features').set('Authorization', token);
    const all = await read(CLIENT_TOKEN);
    const shop = await read(SCOPED_CLIENT);
    expect(all.status).toBe(200);
    expect(shop.status).toBe(200);
    const projects = (res: request.Response) =>
      [...new Set((res.body as { features: { project: string }[] }).features.map((f) => f.project))].sort();
    expect(projects(all).length).toBeGreaterThan(1);
    expect(projects(shop)).toEqual(['shop']);
    expect(shop.headers.etag).not.toBe(all.headers.etag);
    // asking for another project through the query gives nothing more
    const asked = await request(server().app)
      .get('/api/client/features?project=default')
      .set('Authorization', SCOPED_CLIENT);
    expect((asked.body as { features: unknown[] }).features).toEqual([]);
  });

  it('answers 400 naming the problem when creating a token with a bad type, environment or project', async () => {
    expectError(
      await createToken({ type: 'admin', environment: 'development' }),
      400,
      'ValidationError',
      /type/,
    );
    expectError(
      await createToken({ type: 'frontend', environment: 'staging' }),
      400,
      'ValidationError',
      /environment/,
    );
    expectError(await createToken({ type: 'frontend' }), 400, 'ValidationError', /environment/);
    expectError(
      await createToken({ type: 'frontend', environment: 'development', projects: ['a:b'] }),
      400,
      'ValidationError',
      /projects\[0\]/,
    );
    expectError(
      await createToken({ type: 'frontend', environment: 'development' }, VIEWER_TOKEN),
      403,
      'NoAccessError',
      /ADMIN/,
    );
    expectError(
      await createToken({ type: 'frontend', environment: 'development' }, CLIENT_TOKEN),
      403,
      'NoAccessError',
    );
  });

  it('answers 400 ValidationError to a malformed body', async () => {
    expectError(await validate('{"tokens": ['), 400, 'ValidationError', /not valid JSON/);
    expectError(await validate({}), 400, 'ValidationError', /tokens/);
    expectError(await validate({ tokens: 'abc' }), 400, 'ValidationError', /tokens/);
    expectError(await validate({ tokens: [1, 2] }), 400, 'ValidationError', /tokens\[0\]/);
    expectError(await validate([FRONTEND]), 400, 'ValidationError');
    expectError(
      await validate({ tokens: Array.from({ length: 251 }, (_, i) => `t${i}`) }),
      400,
      'ValidationError',
      /at most 250 tokens/,
    );
    const notJson = await request(server().app)
      .post('/edge/validate')
      .set('Content-Type', 'text/plain')
      .send('x');
    expectError(notJson, 415, 'ContentTypeError');
  });

  it('needs no Authorization, accepts an admin token, and refuses client and frontend tokens with 403 and unknown ones with 401', async () => {
    const body = { tokens: [FRONTEND] };
    expect((await validate(body)).status).toBe(200);
    const admin = await validate(body, ADMIN_TOKEN);
    expect(admin.status).toBe(200);
    expect(admin.body.tokens).toHaveLength(1);
    expect((await validate(body, `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
    expectError(await validate(body, CLIENT_TOKEN), 403, 'NoAccessError', /client token/);
    expectError(await validate(body, FRONTEND), 403, 'NoAccessError', /frontend token/);
    expectError(await validate(body, 'not-a-token'), 401, 'AuthenticationRequired');
    // The token check comes before the body.
    expectError(await validate('{broken', FRONTEND), 403, 'NoAccessError');
  });
});
