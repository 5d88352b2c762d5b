import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { CLIENT_TOKEN, backends, useTestServer } from './helpers/backends';

/** Every member name of Object.prototype, and look-alikes built from them. */
const PROTO_NAMES = Object.getOwnPropertyNames(Object.prototype);
const NAMES = [...PROTO_NAMES, '__proto__x', 'constructor.prototype'];

const dir = mkdtempSync(path.join(tmpdir(), 'flags-names-'));
const file = path.join(dir, 'features.json');
// Written as text: an object literal with a `__proto__` key would set a prototype instead of a key.
const variantsJson = '[{"name": "__proto__", "weight": 500}, {"name": "constructor", "weight": 500}]';
const parametersJson =
  '{"rollout": "100", "stickiness": "default", "groupId": "g", "__proto__": "kept", "toString": "kept too"}';
writeFileSync(
  file,
  `{"version": 2, "segments": [], "features": [${NAMES.map(
    (name) =>
      `{"name": ${JSON.stringify(name)}, "enabled": true, "strategies": [{"name": "flexibleRollout", "parameters": ${parametersJson}}], "variants": ${variantsJson}}`,
  ).join(',')}]}`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(backends())('names are data on flags-server ($name)', (backend) => {
  const server = useTestServer(backend, { featuresFile: file });

  it('serves a toggle named after every Object.prototype member, with its parameters and variants, and an ETag', async () => {
    const res = await request(server().app).get('/api/client/features').set('Authorization', CLIENT_TOKEN);
    expect(res.status).toBe(200);
    expect(res.headers.etag).toMatch(/^W\/"[^"]+"$/);
    // Parsed as text and reading own properties only, so nothing is inherited.
    const body = JSON.parse(res.text) as {
      features: Array<{
        name: string;
        strategies: Array<{ parameters: object }>;
        variants: Array<{ name: string }>;
      }>;
    };
    expect(body.features.map((f) => f.name)).toEqual(NAMES);
    for (const feature of body.features) {
      const parameters = Object.entries(feature.strategies[0].parameters);
      expect(parameters).toEqual(
        expect.arrayContaining([
          ['__proto__', 'kept'],
          ['toString', 'kept too'],
          ['rollout', '100'],
        ]),
      );
      expect(feature.variants.map((v) => v.name)).toEqual(['__proto__', 'constructor']);
    }
    const again = await request(server().app)
      .get('/api/client/features')
      .set('Authorization', CLIENT_TOKEN)
      .set('If-None-Match', res.headers.etag as string);
    expect(again.status).toBe(304);
  });

  it('stores the usage counts of toggles and variants named after Object.prototype members', async () => {
    const toggles = NAMES.map(
      (name, i) =>
        `${JSON.stringify(name)}: {"yes": ${i + 1}, "no": 1, "variants": {"__proto__": ${i + 1}, "constructor": 2}}`,
    ).join(',');
    const res = await request(server().app)
      .post('/api/client/metrics')
      .set('Authorization', CLIENT_TOKEN)
      .set('Content-Type', 'application/json')
      .send(
        `{"appName": "names-app", "instanceId": "i-1", "bucket": {"start": "2024-05-01T10:00:00.000Z", "stop": "2024-05-01T10:01:00.000Z", "toggles": {${toggles}}}}`,
      );
    expect(res.status).toBe(202);
    const usage = await server().stores.clients.usage({ appName: 'names-app' });
    expect(usage.map((u) => u.featureName).sort()).toEqual([...NAMES].sort());
    for (const row of usage) {
      const i = NAMES.indexOf(row.featureName);
      expect({ name: row.featureName, yes: row.yes, no: row.no }).toEqual({
        name: NAMES[i],
        yes: i + 1,
        no: 1,
      });
      expect(Object.entries(row.variants).sort()).toEqual([
        ['__proto__', i + 1],
        ['constructor', 2],
      ]);
    }
    const one = await server().stores.clients.usage({ appName: 'names-app', featureName: '__proto__' });
    expect(one).toHaveLength(1);
    expect(one[0].yes).toBe(NAMES.indexOf('__proto__') + 1);
  });
});
