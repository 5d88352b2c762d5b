import { spawnSync } from 'node:child_process';
import path from 'node:path';
import request from 'supertest';
import type { OpenAPIObject, OperationObject, PathItemObject } from 'openapi3-ts/oas31';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const ROOT = path.resolve(__dirname, '../../..');

/** Validates with @seriousme/openapi-schema-validator (ESM only, so in a child node process). */
function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const script = `
    import { Validator } from '@seriousme/openapi-schema-validator';
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    const result = await new Validator().validate(JSON.parse(text));
    process.stdout.write(JSON.stringify(result));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    input: JSON.stringify(document),
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`validator failed to run: ${run.stderr}`);
  return JSON.parse(run.stdout) as { valid: boolean; errors?: unknown };
}

const OPERATIONS = ['get', 'post', 'put', 'delete', 'patch'] as const;
function operations(doc: OpenAPIObject): Array<[string, string, OperationObject]> {
  return Object.entries(doc.paths ?? {}).flatMap(([p, item]: [string, PathItemObject]) =>
    OPERATIONS.filter((m) => item[m] !== undefined).map((m): [string, string, OperationObject] => [
      p,
      m,
      item[m] as OperationObject,
    ]),
  );
}

describe('OpenAPI description and UI', () => {
  let upstream: TestUpstream;
  const apps: ProxyApp[] = [];
  const app = (options: Parameters<typeof proxyFor>[1]) => {
    const created = proxyFor(upstream, options);
    apps.push(created);
    return created;
  };

  beforeAll(async () => {
    upstream = await new TestUpstream(sampleFeatures()).start();
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await upstream.stop();
  });

  it('serves an openapi.json that a validator accepts as OpenAPI 3', async () => {
    const res = await request(app({ enableOAS: true }))
      .get('/docs/openapi.json')
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const doc = res.body as OpenAPIObject;
    expect(doc.openapi).toMatch(/^3\./);
    const result = validateOpenApi(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('the validator used by these tests rejects a broken document', () => {
    expect(validateOpenApi({ openapi: '3.1.0', info: { title: 'x' }, paths: { nope: {} } }).valid).toBe(
      false,
    );
  });

  it('describes every proxy endpoint with its responses and the standard errors', async () => {
    const doc = (await request(app({ enableOAS: true })).get('/docs/openapi.json')).body as OpenAPIObject;
    expect(Object.keys(doc.paths ?? {}).sort()).toEqual(
      [
        '/proxy',
        '/proxy/all',
        '/proxy/all/client/metrics',
        '/proxy/client/features',
        '/proxy/client/metrics',
        '/proxy/client/register',
        '/proxy/health',
        '/proxy/internal-backstage/prometheus',
        '/ofrep/v1/evaluate/flags',
        '/ofrep/v1/evaluate/flags/{key}',
        '/ofrep/v1/flag-changes',
        // the Unleash frontend API and Unleash Edge's paths, and the client API for backend SDKs
        '/api/frontend',
        '/api/frontend/all',
        '/api/frontend/client/metrics',
        '/api/frontend/client/register',
        '/api/proxy',
        '/api/proxy/all',
        '/api/proxy/client/metrics',
        '/api/proxy/client/register',
        '/api/client/features',
        '/api/client/metrics',
        '/api/client/register',
        // Unleash Edge's internal backstage and what an instance below this one asks of it
        '/internal-backstage/health',
        '/internal-backstage/ready',
        '/internal-backstage/metrics',
        '/internal-backstage/tokens',
        '/internal-backstage/metricsbatch',
        '/internal-backstage/features',
        '/internal-backstage/status',
        '/internal-backstage/status.json',
        '/edge/validate',
        '/api/client/metrics/bulk',
      ].sort(),
    );
    expect(doc.paths?.['/proxy']?.get).toBeDefined();
    expect(doc.paths?.['/proxy']?.post).toBeDefined();
    expect(doc.paths?.['/proxy/all']?.get).toBeDefined();
    for (const [p, method, op] of operations(doc)) {
      const statuses = Object.keys(op.responses ?? {});
      expect({ op: `${method} ${p}`, has500: statuses.includes('500') }).toEqual({
        op: `${method} ${p}`,
        has500: true,
      });
      expect(statuses.some((s) => s.startsWith('2'))).toBe(true);
      // keyless: the health and readiness probes, Edge's backstage diagnostics, token validation
      const keyless =
        p === '/proxy/health' ||
        p === '/edge/validate' ||
        (p.startsWith('/internal-backstage/') && p !== '/internal-backstage/features');
      if (!keyless) expect(statuses).toContain('401');
      if (!keyless || p === '/internal-backstage/ready' || p === '/edge/validate')
        expect(statuses).toContain('503');
    }
    expect(Object.keys(doc.paths?.['/proxy/all']?.get?.responses ?? {})).toContain('501');
    expect(Object.keys(doc.paths?.['/proxy']?.post?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '304', '400', '413', '415']),
    );
    // Every error response carries the {id, name, message} body.
    const notReady = doc.components?.responses?.Error503NotReady;
    expect(notReady).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    });
    expect(doc.components?.schemas?.Error).toMatchObject({ required: ['id', 'name', 'message'] });
  });

  it('describes the GET context parameters and the POST body from the validating schemas', async () => {
    const doc = (await request(app({ enableOAS: true })).get('/docs/openapi.json')).body as OpenAPIObject;
    const names = (doc.paths?.['/proxy']?.get?.parameters ?? []).map((p) => ('name' in p ? p.name : ''));
    expect(names).toEqual(
      expect.arrayContaining(['appName', 'environment', 'userId', 'sessionId', 'currentTime', 'properties']),
    );
    expect(doc.paths?.['/proxy']?.post?.requestBody).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ProxyRequest' } } },
    });
    expect(doc.components?.schemas?.ProxyRequest).toMatchObject({
      properties: { toggles: { type: 'array', items: { type: 'string' } } },
    });
    expect(doc.components?.schemas?.Toggle).toMatchObject({
      required: ['name', 'enabled', 'impressionData', 'variant'],
    });
    expect(doc.components?.schemas?.ClientMetrics).toMatchObject({
      required: ['appName'], // bucket is optional, as Unleash accepts it
    });
  });

  it('declares the client key security scheme under the configured header, and none for health', async () => {
    const doc = (
      await request(app({ enableOAS: true, clientKeysHeaderName: 'X-Client-Key' })).get('/docs/openapi.json')
    ).body as OpenAPIObject;
    expect(doc.components?.securitySchemes?.clientKey).toEqual(
      expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-client-key' }),
    );
    expect(doc.security).toEqual([{ clientKey: [] }]);
    expect(doc.paths?.['/proxy/health']?.get?.security).toEqual([]);
    expect(doc.paths?.['/proxy/client/features']?.get?.security).toEqual([{ serverSideToken: [] }]);
  });

  it('behind a base path, the server URL carries the prefix and the paths do not', async () => {
    const proxy = app({ enableOAS: true, proxyBasePath: 'base/path' });
    const doc = (await request(proxy).get('/base/path/docs/openapi.json').expect(200)).body as OpenAPIObject;
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/base/path' })]);
    for (const p of Object.keys(doc.paths ?? {})) expect(p.startsWith('/base')).toBe(false);
    // "Try it" joins the server URL and a path: that is a route the proxy answers.
    await proxy.whenReady();
    const tryIt = `${doc.servers?.[0].url}/proxy`;
    await request(proxy).get(tryIt).set('authorization', CLIENT_KEY).expect(200);
    await request(proxy).get('/docs/openapi.json').expect(404);
  });

  it('serves the interactive UI, which loads the description next to it', async () => {
    const proxy = app({ enableOAS: true, proxyBasePath: '/base' });
    const redirect = await request(proxy).get('/base/docs/openapi').expect(301);
    expect(redirect.headers.location).toBe('openapi/');
    const page = await request(proxy).get('/base/docs/openapi/').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('swagger-ui');
    const init = await request(proxy).get('/base/docs/openapi/swagger-ui-init.js').expect(200);
    expect(init.text).toContain('"swaggerUrl": "../openapi.json"');
    // ../openapi.json from /base/docs/openapi/ is this:
    await request(proxy).get('/base/docs/openapi.json').expect(200);
    await request(proxy).get('/base/docs/openapi/swagger-ui-bundle.js').expect(200);
  });

  it('needs no client key and answers while the proxy is not ready', async () => {
    const notReady = proxyFor(upstream, { enableOAS: true, flagsApiToken: 'wrong-token' });
    apps.push(notReady);
    await request(notReady).get('/proxy/health').expect(503);
    await request(notReady).get('/docs/openapi.json').expect(200);
    await request(notReady).get('/docs/openapi/').expect(200);
  });

  it('answers 404 on both paths when enableOAS is off', async () => {
    const proxy = await readyProxyFor(upstream, {});
    apps.push(proxy);
    const json = await request(proxy).get('/docs/openapi.json').expect(404);
    expect(json.body).toMatchObject({ name: 'NotFoundError' });
    await request(proxy).get('/docs/openapi').expect(404);
    await request(proxy).get('/docs/openapi/').expect(404);
  });

  it('is switched on by ENABLE_OAS in the environment', async () => {
    const { createApp } = await import('../../../src/proxy/app');
    const { silentLogger } = await import('../../../src/common/logging/logger');
    const proxy = createApp(
      {
        flagsUrl: upstream.url,
        flagsApiToken: upstream.token,
        clientKeys: [CLIENT_KEY],
        logger: silentLogger,
      },
      { ENABLE_OAS: 'true' },
    );
    apps.push(proxy);
    await request(proxy).get('/docs/openapi.json').expect(200);
  });
});
