/**
 * OFREP's answer for one flag, written from docs/openfeature.md's mapping over a plain
 * `unleash-client` evaluation (`referenceSdk`): the oracle of the OFREP tests. Nothing here comes from
 * `src/proxy/ofrep` or the engine: the type from the definition's payload types, the value from the
 * evaluated variant's payload or `enabled`, the reason from the deciding strategy by the docs'
 * table (the deciding strategy being the first one that enables the toggle on its own), the
 * variant name and `metadata.impressionData`.
 */
import type { Context } from 'unleash-client';
import { referenceSdk } from './reference-sdk';

/** Definitions as the OFREP tests write them. */
export interface Variant {
  name: string;
  weight: number;
  payload?: { type: string; value: string };
}
export interface Strategy {
  name: string;
  parameters?: Record<string, string>;
  constraints?: unknown[];
  segments?: number[];
  variants?: Variant[];
}
export interface Feature {
  name: string;
  enabled: boolean;
  impressionData?: boolean;
  strategies: Strategy[];
  variants?: Variant[];
  dependencies?: unknown[];
}

/** docs/openfeature.md "Types": payload type → flag type; any other toggle is boolean. */
const FLAG_TYPE = new Map([
  ['string', 'string'],
  ['csv', 'string'],
  ['number', 'number'],
  ['json', 'object'],
]);

function flagType(f: Feature): string {
  const variants = [...(f.variants ?? []), ...f.strategies.flatMap((s) => s.variants ?? [])];
  const types = new Set(variants.map((v) => (v.payload ? FLAG_TYPE.get(v.payload.type) : undefined)));
  const [only] = types;
  return variants.length > 0 && types.size === 1 && only !== undefined ? only : 'boolean';
}

/** The parameter holding a built-in percentage strategy's percentage. */
const PERCENTAGE: Record<string, string | undefined> = {
  flexibleRollout: 'rollout',
  gradualRolloutUserId: 'percentage',
};

/** docs/openfeature.md "Reasons": the first row of the table the deciding strategy fits. */
function reasonOf(s: Strategy, f: Feature): string {
  const percentage = PERCENTAGE[s.name];
  const below100 = percentage !== undefined && Number(s.parameters?.[percentage] ?? 100) < 100;
  const pickedFrom = (s.variants?.length ? s.variants : (f.variants ?? [])).filter((v) => v.weight > 0);
  if (below100 || pickedFrom.length > 1) return 'SPLIT';
  if ((s.constraints?.length ?? 0) > 0 || (s.segments?.length ?? 0) > 0) return 'TARGETING_MATCH';
  if (s.name === 'default' || percentage !== undefined) return 'STATIC';
  return 'TARGETING_MATCH'; // userWithId, remoteAddress
}

/**
 * docs/api.md: a toggle whose shape would make evaluation throw is quarantined (OFREP: `GENERAL`).
 * Of those shapes, the OFREP tests write one: a strategy with variants but no `parameters` (the SDK
 * reads `parameters.groupId` for them); and a toggle depending on a quarantined one is quarantined.
 */
function quarantined(f: Feature, all: Feature[], seen = new Set<string>()): boolean {
  if (seen.has(f.name)) return false;
  seen.add(f.name);
  if (f.strategies.some((s) => (s.variants?.length ?? 0) > 0 && s.parameters === undefined)) return true;
  return (f.dependencies ?? []).some((d) => {
    const parent = all.find((x) => x.name === (d as { feature?: string }).feature);
    return parent !== undefined && quarantined(parent, all, seen);
  });
}

/** What OFREP answers for one flag, written from the docs over the plain SDK's evaluation. */
export function ofrepOracle(
  features: Feature[],
  segments: unknown[],
  context: Context,
): (name: string) => Record<string, unknown> | undefined {
  const whole = referenceSdk({ features, segments }, {});
  return (name) => {
    const f = features.find((x) => x.name === name);
    if (!f) return undefined;
    if (quarantined(f, features))
      return { key: name, errorCode: 'GENERAL', errorDetails: expect.any(String) as unknown };
    const answer = whole(name, context);
    if (answer === 'threw') throw new Error(`the plain SDK threw on ${name}`);
    const common = {
      key: name,
      variant: answer.variant.name,
      metadata: { impressionData: f.impressionData === true },
    };
    if (!f.enabled) return { ...common, reason: 'DISABLED' };
    let reason = 'DEFAULT';
    if (answer.enabled && f.strategies.length === 0) reason = 'STATIC';
    else if (answer.enabled) {
      // the deciding strategy: the first one that enables the toggle on its own for this context
      const deciding = f.strategies.find((s) => {
        const alone = { ...f, strategies: [s], dependencies: [] };
        const one = referenceSdk({ features: [alone], segments }, {})(name, context);
        return one !== 'threw' && one.enabled;
      });
      if (!deciding) throw new Error(`no strategy of ${name} enables it alone`);
      reason = reasonOf(deciding, f);
    }
    const type = flagType(f);
    if (type === 'boolean') return { ...common, reason, value: answer.enabled };
    const payload = answer.variant.payload as { type: string; value: string } | undefined;
    if (!answer.enabled || !payload) return { ...common, reason };
    const parseError = {
      key: name,
      errorCode: 'PARSE_ERROR',
      errorDetails: expect.stringContaining(name) as unknown,
    };
    if (type === 'string') return { ...common, reason, value: payload.value };
    if (type === 'number') {
      const n = payload.value.trim() === '' ? NaN : Number(payload.value);
      return Number.isFinite(n) ? { ...common, reason, value: n } : parseError;
    }
    try {
      const value: unknown = JSON.parse(payload.value);
      return typeof value === 'object' && value !== null ? { ...common, reason, value } : parseError;
    } catch {
      return parseError;
    }
  };
}
