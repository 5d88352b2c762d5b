import type { OpenAPIObject, SchemaObject } from 'openapi3-ts/oas31';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { proxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { ofrepFeatures } from './fixtures';

let upstream: TestUpstream;
let app: ProxyApp;

beforeAll(async () => {
  upstream = await new TestUpstream(ofrepFeatures()).start();
  app = proxyFor(upstream, { enableOAS: true });
});

afterAll(async () => {
  await app.close();
  await upstream.stop();
});

test('the OpenAPI document describes both OFREP endpoints and the stream from the validating schemas', async () => {
  const doc = (await request(app).get('/docs/openapi.json').expect(200)).body as OpenAPIObject;
  const single = doc.paths?.['/ofrep/v1/evaluate/flags/{key}']?.post;
  const bulk = doc.paths?.['/ofrep/v1/evaluate/flags']?.post;
  const stream = doc.paths?.['/ofrep/v1/flag-changes']?.get;
  for (const op of [single, bulk]) {
    expect(op?.requestBody).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/OfrepRequest' } } },
    });
    expect(Object.keys(op?.responses ?? {})).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '413', '415', '500', '503']),
    );
  }
  expect(Object.keys(single?.responses ?? {})).toContain('404');
  expect(Object.keys(bulk?.responses ?? {})).toContain('304');
  expect(Object.keys(stream?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '503']));
  const context = doc.components?.schemas?.OfrepContext as SchemaObject;
  expect(Object.keys(context.properties ?? {})).toEqual(
    expect.arrayContaining(['targetingKey', 'userId', 'properties']),
  );
  expect(doc.components?.schemas?.OfrepBulkSuccess).toMatchObject({
    properties: { eventStreams: { type: 'array' } },
  });
  expect(doc.components?.securitySchemes).toMatchObject({
    ofrepBearer: { type: 'http', scheme: 'bearer' },
    ofrepApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
    streamToken: { type: 'apiKey', in: 'query', name: 'token' },
  });
});
