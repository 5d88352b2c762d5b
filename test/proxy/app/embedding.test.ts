import express from 'express';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { createApp } from '../../../src';
import { silentLogger } from '../../../src/common/logging/logger';
import { sampleFeatures } from '../../support/fixtures';
import { readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const apps: ProxyApp[] = [];
const upstreams: TestUpstream[] = [];

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(upstreams.map((u) => u.stop()));
});

test('two apps in one process keep their own keys, upstreams and flags', async () => {
  const onlyOne = sampleFeatures();
  onlyOne.features = onlyOne.features.slice(0, 1);
  const a = await new TestUpstream(sampleFeatures(), 'token-a').start();
  const b = await new TestUpstream(onlyOne, 'token-b').start();
  upstreams.push(a, b);
  const appA = await readyProxyFor(a, { clientKeys: ['key-a'] });
  const appB = await readyProxyFor(b, { clientKeys: ['key-b'], proxyBasePath: '/b' });
  apps.push(appA, appB);

  const fromA = await request(appA).get('/proxy').set('Authorization', 'key-a');
  const fromB = await request(appB).get('/b/proxy').set('Authorization', 'key-b');
  expect(fromA.body.toggles.length).toBeGreaterThan(1);
  expect(fromB.body.toggles.map((t: { name: string }) => t.name)).toEqual(['always-on']);
  expect((await request(appA).get('/proxy').set('Authorization', 'key-b')).status).toBe(401);
  expect(a.featureRequests().every((r) => r.headers.authorization === 'token-a')).toBe(true);
  expect(b.featureRequests().every((r) => r.headers.authorization === 'token-b')).toBe(true);
});

test('mounts inside an existing Express server next to its own routes', async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  upstreams.push(upstream);
  const proxy = createApp(
    { flagsUrl: upstream.url, flagsApiToken: upstream.token, clientKeys: ['web'], logger: silentLogger },
    {},
  );
  apps.push(proxy);
  await proxy.whenReady();
  const host = express();
  host.get('/own', (_req, res) => {
    res.json({ own: true });
  });
  host.use('/flags', proxy);
  expect((await request(host).get('/own')).body).toEqual({ own: true });
  const res = await request(host).get('/flags/proxy').set('Authorization', 'web');
  expect(res.status).toBe(200);
  expect(res.body.toggles.map((t: { name: string }) => t.name)).toContain('always-on');
});

test('createApp reads the environment only for options left out', async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  upstreams.push(upstream);
  const proxy = createApp(
    { flagsUrl: upstream.url, logger: silentLogger },
    {
      FLAGS_URL: 'http://127.0.0.1:1/never',
      FLAGS_API_TOKEN: upstream.token,
      FLAGS_PROXY_CLIENT_KEYS: 'env-key',
    },
  );
  apps.push(proxy);
  await proxy.whenReady();
  expect((await request(proxy).get('/proxy').set('Authorization', 'env-key')).status).toBe(200);
});
