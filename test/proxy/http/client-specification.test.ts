/**
 * Every case of `@unleash/client-specification` (the suite every Unleash SDK passes), through every
 * evaluation surface of the proxy: `GET /proxy`, `POST /proxy`, `POST /api/frontend`, and OFREP's
 * single and bulk evaluation. Each spec file's `state` is the answer of a real upstream on loopback;
 * the spec's `expectedResult` is the oracle.
 *
 * Addresses: the proxy evaluates the address it saw, never a client's claim. A case whose context
 * has `remoteAddress` is sent to a proxy with `trustProxy: true` with that address in
 * `X-Forwarded-For`. A proxy cannot see "no address"; in a file whose definitions read the address,
 * a case without one is sent from 192.0.2.1 (TEST-NET-1), which no definition names. Every other
 * case is sent to a proxy without `trustProxy` over a kept-alive loopback connection.
 */
import { isDeepStrictEqual } from 'node:util';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import {
  definitionsOf,
  loadSpecifications,
  ofrepTypeOf,
  ofrepValueOf,
  upstreamAnswerOf,
  type SpecContext,
  type SpecFeature,
  type SpecFile,
  type SpecVariant,
  variantsOf,
} from '../../support/client-specification';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

/** One case of a spec file, `tests` and `variantTests` alike. */
interface Case {
  title: string;
  toggleName: string;
  context: SpecContext;
  /** Whether the toggle is enabled (`feature_enabled` of a variant test). */
  enabled: boolean;
  /** The variant `getVariant` answers, for variant tests. */
  variant?: SpecVariant;
}

interface ProxyToggle {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  variant: SpecVariant;
}

/** Where one case is sent: the proxy's base URL and the headers that give it its address. */
interface Route {
  base: string;
  headers: Record<string, string>;
}

/** The address of a case without one, in a file whose definitions read the address. */
const NO_ADDRESS = '192.0.2.1';
const NOT_LISTED: SpecVariant = { name: 'disabled', enabled: false };
const ENABLED_REASONS = /^(STATIC|TARGETING_MATCH|SPLIT)$/;
/** Root fields of an OFREP context; a spec property of the same name stays under `properties`. */
const OFREP_ROOT = new Set([
  'targetingKey',
  'appName',
  'environment',
  'userId',
  'sessionId',
  'currentTime',
  'remoteAddress',
  'properties',
]);

function casesOf(spec: SpecFile): Case[] {
  const tests = (spec.tests ?? []).map((t) => ({
    title: t.description,
    toggleName: t.toggleName,
    context: t.context,
    enabled: t.expectedResult,
  }));
  const variantTests = (spec.variantTests ?? []).map((t) => {
    const { feature_enabled: enabled, ...variant } = t.expectedResult;
    return {
      title: `[variant] ${t.description}`,
      toggleName: t.toggleName,
      context: t.context,
      enabled,
      variant,
    };
  });
  return [...tests, ...variantTests];
}

/** The context as `GET /proxy` query parameters: root fields, and `properties[name]=value`. */
function queryOf(context: SpecContext): string {
  const query = new URLSearchParams();
  for (const field of ['appName', 'environment', 'userId', 'sessionId', 'currentTime'] as const) {
    const value = context[field];
    if (value !== undefined) query.append(field, value);
  }
  for (const [name, value] of Object.entries(context.properties ?? {})) {
    if (value !== null) query.append(`properties[${name}]`, value);
  }
  return query.toString();
}

/** The context as an OpenFeature client sends it: `targetingKey` is the user, properties are root fields. */
function ofrepContextOf(context: SpecContext): Record<string, unknown> {
  const { userId, properties, ...root } = context;
  const entries: Array<[string, unknown]> = Object.entries(root);
  if (userId !== undefined) entries.push(['targetingKey', userId]);
  const nested: Array<[string, string | null]> = [];
  for (const [name, value] of Object.entries(properties ?? {})) {
    if (OFREP_ROOT.has(name)) nested.push([name, value]);
    else entries.push([name, value]);
  }
  if (nested.length > 0) entries.push(['properties', Object.fromEntries(nested)]);
  return Object.fromEntries(entries);
}

/** An upstream serving one spec file's state, and the proxies in front of it. */
class SpecStack {
  private upstream: TestUpstream | undefined;
  private readonly apps: ProxyApp[] = [];
  private readonly servers = new LoopbackServers();
  private plainBase = '';
  private trustedBase = '';
  readonly definitions: Map<string, SpecFeature>;
  private readonly readsAddress: boolean;

  constructor(
    private readonly spec: SpecFile,
    private readonly cases: readonly Case[],
  ) {
    this.definitions = definitionsOf(spec.state);
    this.readsAddress = JSON.stringify(upstreamAnswerOf(spec.state)).includes('remoteAddress');
  }

  async start(): Promise<void> {
    this.upstream = await new TestUpstream(upstreamAnswerOf(this.spec.state)).start();
    this.plainBase = await this.serve({});
    if (this.readsAddress || this.cases.some((c) => c.context.remoteAddress !== undefined))
      this.trustedBase = await this.serve({ trustProxy: true });
  }

  /**
   * A proxy in front of the upstream, once its first answer was accepted or refused: a refused
   * spec-valid state leaves it not ready, and every case fails with 503.
   */
  private async serve(options: { trustProxy?: boolean }): Promise<string> {
    const app = proxyFor(this.upstream as TestUpstream, { refreshInterval: 60_000, ...options });
    this.apps.push(app);
    const { features } = app;
    await waitFor(
      () => features.isReady() || features.stats.definitionsRefused > 0 || features.stats.fetchErrors > 0,
    );
    return this.servers.listen(app);
  }

  route(c: Case): Route {
    const address = c.context.remoteAddress ?? (this.readsAddress ? NO_ADDRESS : undefined);
    if (address === undefined) return { base: this.plainBase, headers: {} };
    return { base: this.trustedBase, headers: { 'X-Forwarded-For': address } };
  }

  async stop(): Promise<void> {
    await this.servers.closeAll();
    await Promise.all(this.apps.map((a) => a.close()));
    await this.upstream?.stop();
  }
}

async function postToggle(route: Route, path: string, c: Case): Promise<ProxyToggle> {
  const res = await request(route.base)
    .post(path)
    .set({ ...route.headers, Authorization: CLIENT_KEY })
    .send({ context: c.context, toggles: [c.toggleName] });
  expect(res.status).toBe(200);
  const { toggles } = res.body as { toggles: ProxyToggle[] };
  expect(toggles.map((t) => t.name)).toEqual([c.toggleName]);
  return toggles[0];
}

/** `POST /proxy` and `POST /api/frontend` with `toggles: [name]`: the toggle, enabled or not. */
async function checkPost(stack: SpecStack, path: string, c: Case): Promise<void> {
  const toggle = await postToggle(stack.route(c), path, c);
  if (c.variant) {
    expect({ enabled: toggle.enabled, variant: toggle.variant }).toEqual({
      enabled: c.enabled,
      variant: c.variant,
    });
  } else {
    expect({ toggle: toggle.name, enabled: toggle.enabled }).toEqual({
      toggle: c.toggleName,
      enabled: c.enabled,
    });
  }
}

/** `GET /proxy`: the toggle is listed exactly when it is enabled, with its variant. */
async function checkGet(stack: SpecStack, c: Case): Promise<void> {
  const route = stack.route(c);
  const query = queryOf(c.context);
  const res = await request(route.base)
    .get(query === '' ? '/proxy' : `/proxy?${query}`)
    .set({ ...route.headers, Authorization: CLIENT_KEY });
  expect(res.status).toBe(200);
  const toggle = (res.body as { toggles: ProxyToggle[] }).toggles.find((t) => t.name === c.toggleName);
  if (c.variant) {
    expect({ listed: toggle !== undefined, variant: toggle?.variant ?? NOT_LISTED }).toEqual({
      listed: c.enabled,
      variant: c.variant,
    });
  } else {
    expect({ toggle: c.toggleName, listed: toggle !== undefined }).toEqual({
      toggle: c.toggleName,
      listed: c.enabled,
    });
  }
}

/** What an OFREP answer named: the variant and the value. */
interface OfrepAnswer {
  variant?: unknown;
  value?: unknown;
}

/**
 * The variant an OFREP answer must name. A variant test names it. A plain test names none: for an
 * enabled toggle with variants it must be one of the toggle's (the one the answer named, with its
 * payload; a variant without weight only when none has any), else `disabled`.
 */
function variantToExpect(feature: SpecFeature, c: Case, answer: OfrepAnswer): SpecVariant {
  if (c.variant) return c.variant;
  const defined = variantsOf(feature);
  if (!c.enabled || defined.length === 0) return NOT_LISTED;
  const type = ofrepTypeOf(feature);
  const named = defined.filter((v) => v.name === answer.variant);
  const picked =
    named.find((v) => v.payload && isDeepStrictEqual(ofrepValueOf(type, v.payload), answer.value)) ??
    named[0];
  if (picked) {
    const { name, payload } = picked;
    return payload ? { name, enabled: true, payload } : { name, enabled: true };
  }
  if (defined.every((v) => (v.weight ?? 0) === 0)) return NOT_LISTED;
  return { name: `one of ${defined.map((v) => v.name).join(', ')}`, enabled: true };
}

/**
 * The OFREP evaluation of a case's toggle, as the README's OpenFeature section states it, or
 * undefined for a toggle the definitions lack.
 */
function expectedOfrep(stack: SpecStack, c: Case, answer: OfrepAnswer): Record<string, unknown> | undefined {
  const feature = stack.definitions.get(c.toggleName);
  if (!feature) return undefined;
  const variant = variantToExpect(feature, c, answer);
  const base = {
    key: c.toggleName,
    variant: variant.name,
    metadata: { impressionData: feature.impressionData === true },
  };
  const type = ofrepTypeOf(feature);
  if (!feature.enabled) return { ...base, reason: 'DISABLED' };
  if (!c.enabled)
    return type === 'boolean' ? { ...base, reason: 'DEFAULT', value: false } : { ...base, reason: 'DEFAULT' };
  const reason = expect.stringMatching(ENABLED_REASONS) as unknown;
  if (type === 'boolean') return { ...base, reason, value: true };
  return variant.payload
    ? { ...base, reason, value: ofrepValueOf(type, variant.payload) }
    : { ...base, reason };
}

const ofrepRequest = (route: Route, path: string, c: Case) =>
  request(route.base)
    .post(path)
    .set({ ...route.headers, Authorization: `Bearer ${CLIENT_KEY}` })
    .send({ context: ofrepContextOf(c.context) });

/** `POST /ofrep/v1/evaluate/flags/{key}`; a toggle the definitions lack is 404 FLAG_NOT_FOUND. */
async function checkOfrepSingle(stack: SpecStack, c: Case): Promise<void> {
  const path = `/ofrep/v1/evaluate/flags/${encodeURIComponent(c.toggleName)}`;
  const res = await ofrepRequest(stack.route(c), path, c);
  const expected = expectedOfrep(stack, c, res.body as OfrepAnswer);
  if (expected === undefined) {
    expect({ status: res.status, body: res.body as unknown }).toEqual({
      status: 404,
      body: { key: c.toggleName, errorCode: 'FLAG_NOT_FOUND', errorDetails: expect.any(String) as unknown },
    });
    return;
  }
  expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 200, body: expected });
}

/** `POST /ofrep/v1/evaluate/flags`: the toggle's entry, as the single evaluation; none when it is lacking. */
async function checkOfrepBulk(stack: SpecStack, c: Case): Promise<void> {
  const res = await ofrepRequest(stack.route(c), '/ofrep/v1/evaluate/flags', c);
  expect(res.status).toBe(200);
  const entries = (res.body as { flags: Array<OfrepAnswer & { key: string }> }).flags.filter(
    (f) => f.key === c.toggleName,
  );
  const expected = expectedOfrep(stack, c, entries[0] ?? {});
  expect(entries).toEqual(expected === undefined ? [] : [expected]);
}

const SURFACES: ReadonlyArray<[string, (stack: SpecStack, c: Case) => Promise<void>]> = [
  ['GET /proxy', checkGet],
  ['POST /proxy', (stack, c) => checkPost(stack, '/proxy', c)],
  ['POST /api/frontend', (stack, c) => checkPost(stack, '/api/frontend', c)],
  ['OFREP single', checkOfrepSingle],
  ['OFREP bulk', checkOfrepBulk],
];

for (const { file, spec } of loadSpecifications()) {
  describe(file, () => {
    const cases = casesOf(spec);
    const stack = new SpecStack(spec, cases);
    beforeAll(() => stack.start());
    afterAll(() => stack.stop());

    for (const [surface, check] of SURFACES) {
      describe(surface, () => {
        for (const c of cases) test(c.title, () => check(stack, c));
      });
    }
  });
}
