import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { Exposition } from '../../support/exposition';
import { sampleFeatures } from '../../support/fixtures';
import { proxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// The dashboard operators import (docs/operations.md): every series its queries name must be one a
// running proxy serves on /internal-backstage/metrics.
const DASHBOARD = path.resolve(__dirname, '../../../examples/grafana/flags-proxy.json');

interface Target {
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Dashboard {
  __inputs: Array<{ name: string; type: string; pluginId: string }>;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Array<{ definition: string; query: { query: string } }> };
}

// PromQL words that are not series: aggregation modifiers, set operators, offsets.
const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
]);

/** The series a PromQL expression (or a Grafana `label_values(...)` query) names. */
function seriesNamed(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/\$\{?\w+\}?/g, ''); // Grafana variables
  const names: string[] = [];
  for (const match of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, word, call] = match;
    if (call !== undefined || KEYWORDS.has(word)) continue; // a function
    names.push(word);
  }
  // label_values(metric, label): the label is no series
  const labelValues = /label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*(\w+)\s*\)/.exec(expr);
  return labelValues ? names.filter((n) => n !== labelValues[2]) : names;
}

/** Whether `name` is served: a family of the scrape, or a sample series of a histogram or summary one. */
function served(text: Exposition, name: string): boolean {
  if (text.types.has(name)) return true;
  const suffix = ['_bucket', '_sum', '_count'].find((s) => name.endsWith(s));
  if (suffix === undefined) return false;
  const type = text.types.get(name.slice(0, -suffix.length));
  return type === 'histogram' || (type === 'summary' && suffix !== '_bucket');
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const queries = [
  ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr }))),
  ...dashboard.templating.list.map((v) => ({ panel: 'variable', expr: v.query.query })),
];

let upstream: TestUpstream | undefined;
let app: ProxyApp | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
  await upstream?.stop();
  upstream = undefined;
});

describe('the Grafana dashboard in examples/grafana', () => {
  test('reads its series from reading the expressions as PromQL', () => {
    expect(
      seriesNamed(
        'histogram_quantile(0.99, sum by (le, route) (rate(flags_proxy_http_request_duration_seconds_bucket{instance=~"$instance",status="304"}[$__rate_interval])))',
      ),
    ).toEqual(['flags_proxy_http_request_duration_seconds_bucket']);
    expect(seriesNamed('sum(rate(a_total{x="by (b)"}[5m])) / sum(rate(b_total[5m])) or vector(0)')).toEqual([
      'a_total',
      'b_total',
    ]);
    expect(seriesNamed('label_values(flags_proxy_up, instance)')).toEqual(['flags_proxy_up']);
  });

  test('imports without edits: a Prometheus data source input, used by every panel and query', () => {
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(39);
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThanOrEqual(12);
    for (const panel of panels) {
      expect(panel.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
      expect(panel.targets?.length).toBeGreaterThan(0);
      for (const target of panel.targets ?? [])
        expect(target.datasource).toEqual({ type: 'prometheus', uid: '${DS_PROMETHEUS}' });
    }
  });

  test('every series a query names is served by a running proxy', async () => {
    const token = '*:development.upstream-dev-secret';
    upstream = await new TestUpstream(sampleFeatures(), token).start();
    upstream.featureHeaders = { 'x-unleash-version': '7.2.1' };
    upstream.knownTokens.set('*:development.frontend-1', {
      type: 'frontend',
      environment: 'development',
      projects: ['*'],
    });
    app = proxyFor(upstream, { flagsApiToken: token, clientKeys: ['plain-key'] });
    await app.whenReady();
    const first = await request(app)
      .get('/proxy')
      .set('Authorization', '*:development.frontend-1')
      .expect(200);
    await request(app)
      .get('/proxy')
      .set('Authorization', '*:development.frontend-1')
      .set('If-None-Match', String(first.headers.etag))
      .expect(304);
    await request(app).get('/proxy').set('Authorization', '*:development.refused').expect(401);

    const res = await request(app).get('/internal-backstage/metrics').expect(200);
    const text = new Exposition(res.text);
    const named = queries.flatMap((q) => seriesNamed(q.expr).map((name) => ({ ...q, name })));
    expect(named.length).toBeGreaterThanOrEqual(queries.length);
    const missing = named.filter((n) => !served(text, n.name));
    expect(missing).toEqual([]);
    // and what the panels chart has samples now, except what only a fault would record
    const WITHOUT_FAULT = new Set([
      'client_register_failures',
      'client_feature_fetch_failures',
      'token_validation_failures',
      'flags_proxy_event_streams_refused_total',
      'flags_proxy_token_validation_shed_total',
    ]);
    const empty = named
      .filter((n) => !WITHOUT_FAULT.has(n.name))
      .filter((n) => text.samples.every((s) => s.name !== n.name));
    expect(empty.map((n) => n.name)).toEqual([]);
  });
});
