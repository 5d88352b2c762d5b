/**
 * The cases of `@unleash/client-specification` (the shared test suite of every Unleash SDK), read
 * from the installed package, and what a spec file's `state` becomes as an upstream's answer.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FeaturesPayload } from './upstream';

/** A context as the specification writes it. */
export interface SpecContext {
  appName?: string;
  environment?: string;
  userId?: string;
  sessionId?: string;
  remoteAddress?: string;
  currentTime?: string;
  properties?: Record<string, string | null>;
}

export interface SpecVariant {
  name: string;
  enabled: boolean;
  payload?: { type: string; value: string };
}

/** A variant as the SDK's `getVariant` answers it: with whether the toggle itself is enabled. */
export interface ExpectedVariant extends SpecVariant {
  feature_enabled: boolean;
}

export interface SpecTest {
  description: string;
  context: SpecContext;
  toggleName: string;
  expectedResult: boolean;
}

export interface SpecVariantTest {
  description: string;
  context: SpecContext;
  toggleName: string;
  expectedResult: ExpectedVariant;
}

/** A variant of a toggle or strategy definition. */
export interface SpecDefinedVariant {
  name: string;
  weight?: number;
  payload?: { type: string; value: string } | null;
}

/** The fields of a toggle definition the harness reads (the rest is served as it is). */
export interface SpecFeature {
  name: string;
  enabled: boolean;
  impressionData?: boolean;
  variants?: SpecDefinedVariant[] | null;
  strategies?: Array<{ variants?: SpecDefinedVariant[] | null }> | null;
}

/** Every variant a toggle's definition names: its own, then its strategies'. */
export function variantsOf(feature: SpecFeature): SpecDefinedVariant[] {
  return [...(feature.variants ?? []), ...(feature.strategies ?? []).flatMap((s) => s.variants ?? [])];
}

export interface SpecSegment {
  id: number;
}

/** An event of the delta format (`{events: [...]}`), as unleash-client's repository applies it. */
export type DeltaEvent =
  | { type: 'hydration'; features: SpecFeature[]; segments?: SpecSegment[] }
  | { type: 'feature-updated'; feature: SpecFeature }
  | { type: 'feature-removed'; featureName: string }
  | { type: 'segment-updated'; segment: SpecSegment }
  | { type: 'segment-removed'; segmentId: number }
  | { type: string };

export type SpecState =
  { version?: number; features: SpecFeature[]; segments?: SpecSegment[] } | { events: DeltaEvent[] };

export interface SpecFile {
  name: string;
  state: SpecState;
  tests?: SpecTest[];
  variantTests?: SpecVariantTest[];
}

export const SPECIFICATION_DIR = path.join(
  path.dirname(require.resolve('@unleash/client-specification/package.json')),
  'specifications',
);

/** Every spec file the package's `index.json` lists, in its order. */
export function loadSpecifications(): Array<{ file: string; spec: SpecFile }> {
  const read = (file: string): unknown =>
    JSON.parse(readFileSync(path.join(SPECIFICATION_DIR, file), 'utf8'));
  const files = read('index.json') as string[];
  return files.map((file) => ({ file, spec: read(file) as SpecFile }));
}

function isEvent<T extends DeltaEvent['type']>(
  event: DeltaEvent,
  type: T,
): event is Extract<DeltaEvent, { type: T }> {
  return event.type === type;
}

/**
 * The full state a list of delta events leaves, applied in order as unleash-client's repository
 * applies them: `hydration` replaces toggles and segments, `feature-updated` sets a toggle,
 * `feature-removed` deletes one, `segment-updated`/`segment-removed` likewise; other types are
 * ignored (the SDK only warns about them).
 */
export function applyDeltaEvents(events: readonly DeltaEvent[]): FeaturesPayload {
  let features = new Map<string, SpecFeature>();
  let segments = new Map<number, SpecSegment>();
  for (const event of events) {
    if (isEvent(event, 'hydration')) {
      features = new Map(event.features.map((f) => [f.name, f]));
      segments = new Map((event.segments ?? []).map((s) => [s.id, s]));
    } else if (isEvent(event, 'feature-updated')) {
      features.set(event.feature.name, event.feature);
    } else if (isEvent(event, 'feature-removed')) {
      features.delete(event.featureName);
    } else if (isEvent(event, 'segment-updated')) {
      segments.set(event.segment.id, event.segment);
    } else if (isEvent(event, 'segment-removed')) {
      segments.delete(event.segmentId);
    }
  }
  return { version: 2, features: [...features.values()], segments: [...segments.values()] };
}

/** What the upstream answers on `/api/client/features` for a spec file's `state`. */
export function upstreamAnswerOf(state: SpecState): FeaturesPayload {
  if ('events' in state) return applyDeltaEvents(state.events);
  return { ...state, version: state.version ?? 1 };
}

/** The toggle definitions of a state, by name. */
export function definitionsOf(state: SpecState): Map<string, SpecFeature> {
  const answer = upstreamAnswerOf(state);
  return new Map((answer.features as SpecFeature[]).map((f) => [f.name, f]));
}

export type OfrepType = 'boolean' | 'string' | 'number' | 'object';

const TYPE_OF_PAYLOAD: Readonly<Record<string, OfrepType>> = {
  string: 'string',
  csv: 'string',
  number: 'number',
  json: 'object',
};

/**
 * A flag's OFREP type as the README states it: a toggle whose variants (its own and its
 * strategies') all carry payloads of one type has that type, every other toggle is boolean.
 */
export function ofrepTypeOf(feature: SpecFeature): OfrepType {
  const types = new Set(
    variantsOf(feature).map((v) => (v.payload ? TYPE_OF_PAYLOAD[v.payload.type] : undefined)),
  );
  const [only] = types;
  return types.size === 1 && only !== undefined ? only : 'boolean';
}

/** A payload's value as an OFREP flag of `type` carries it. */
export function ofrepValueOf(type: OfrepType, payload: { value: string }): unknown {
  if (type === 'number') return Number(payload.value);
  if (type === 'object') return JSON.parse(payload.value) as unknown;
  return payload.value;
}
