import { z } from 'zod';

/**
 * The client API's definitions (`{version, features, segments}`, as `GET /api/client/features`
 * serves them and `unleash-client` 6 reads them): each object's fields, written once with the type
 * the client API gives them. Two schemas derive from these and keep their differences explicit:
 * - the proxy's documented schema (`proxy/upstream/definitions-schema.ts`) is loose (`loosened`):
 *   unknown fields are kept, every field but a few may be missing or null, and it only documents
 *   (the SDK decides what definitions mean);
 * - the flag server's features file (`server/features/schema.ts`) is strict (`StrictShape`): it
 *   lists every field below in its own order, each with this type or a narrower one, a default or
 *   leave to be absent, and adds its authoring fields (tags, type, description, …).
 * Objects that hold others take the holder's own schemas of them (`parts`).
 */

/** A non-empty string: a name, a context field, an operator, a payload type. */
const label = z.string().min(1);

export const constraintFields = {
  contextName: label,
  operator: label,
  /** Read by the list operators (`LIST_OPERATORS`). */
  values: z.array(z.string()),
  /** Read by every other operator. */
  value: z.string(),
  inverted: z.boolean(),
  caseInsensitive: z.boolean(),
};

export const payloadFields = { type: label, value: z.string() };

export const overrideFields = { contextName: label, values: z.array(z.string()) };

export const variantFields = <P extends z.ZodType, O extends z.ZodType>(parts: {
  payload: P;
  override: O;
}) => ({
  name: label,
  weight: z.number().nonnegative(),
  weightType: z.string(),
  stickiness: z.string(),
  payload: parts.payload,
  overrides: z.array(parts.override),
});

export const strategyFields = <C extends z.ZodType, V extends z.ZodType>(parts: {
  constraint: C;
  variants: V;
}) => ({
  name: label,
  /** Strings in the client API. */
  parameters: z.record(z.string(), z.string()),
  constraints: z.array(parts.constraint),
  /** Ids of segments of the same answer. */
  segments: z.array(z.number().int()),
  variants: parts.variants,
});

export const dependencyFields = {
  /** The parent toggle's name. */
  feature: label,
  enabled: z.boolean(),
  variants: z.array(z.string()),
};

export const featureFields = <S extends z.ZodType, V extends z.ZodType, D extends z.ZodType>(parts: {
  strategy: S;
  variants: V;
  dependency: D;
}) => ({
  name: label,
  enabled: z.boolean(),
  project: z.string(),
  impressionData: z.boolean(),
  strategies: z.array(parts.strategy),
  variants: parts.variants,
  dependencies: z.array(parts.dependency),
});

export const segmentFields = <C extends z.ZodType>(parts: { constraint: C }) => ({
  id: z.number().int(),
  name: z.string(),
  constraints: z.array(parts.constraint),
});

export const documentFields = <F extends z.ZodType, S extends z.ZodType>(parts: {
  feature: F;
  segment: S;
}) => ({
  version: z.number(),
  features: z.array(parts.feature),
  segments: z.array(parts.segment),
});

type Fields = Record<string, z.ZodType>;

/** `fields` with every field but `required` allowed to be missing or null. */
export type Loosened<F extends Fields, R extends keyof F> = {
  [K in keyof F]: K extends R ? F[K] : z.ZodOptional<z.ZodNullable<F[K]>>;
};

/**
 * The loose reading of wire fields (the proxy's documented schema): the fields in `required` as
 * they are, every other one allowed to be missing or null, as the SDK reads them (`?.`, `?? []`).
 */
export function loosened<F extends Fields, R extends keyof F>(
  fields: F,
  required: readonly R[],
): Loosened<F, R> {
  const out: Fields = {};
  for (const [key, schema] of Object.entries(fields))
    out[key] = (required as readonly PropertyKey[]).includes(key) ? schema : schema.nullish();
  return out as Loosened<F, R>;
}

/**
 * A strict reading of wire fields (the flag server's): every wire field, each with a schema whose
 * values are the wire type's (the same, narrower, defaulted, or allowed to be absent), plus fields
 * of its own. Checked with `satisfies`, so the shape keeps its own order (the order of the served
 * JSON).
 */
export type StrictShape<F extends Fields> = {
  [K in keyof F]-?: z.ZodType<z.output<F[K]> | undefined, unknown>;
} & Fields;
