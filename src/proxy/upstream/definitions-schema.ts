import { z } from 'zod';
import {
  isDateOperator,
  isListOperator,
  isNumberOperator,
  isSemverOperator,
  SEMVER,
} from '../../common/definitions/operators';

/**
 * The documented shape of the client API's definitions (the OpenAPI description of
 * `/proxy/client/features`): every field `unleash-client` 6 reads while evaluating, with the types
 * the client API gives them. It documents; it does not decide what is accepted. The SDK is the
 * arbiter of what definitions mean: `definitions-document.ts` refuses only what is no definitions
 * document, and `toggle-faults.ts` quarantines a toggle whose shape would make evaluation throw.
 */

/** A number written as a string (or a number), as the SDK reads it with `Number(...)`. */
const isNumeric = (value: unknown): boolean =>
  (typeof value === 'number' || (typeof value === 'string' && value.trim() !== '')) &&
  Number.isFinite(Number(value));

const constraint = z
  .looseObject({
    contextName: z.string().min(1),
    operator: z.string().min(1),
    values: z.array(z.string()).nullish(),
    value: z.string().nullish(),
    inverted: z.boolean().nullish(),
    caseInsensitive: z.boolean().nullish(),
  })
  .superRefine((c, ctx) => {
    const op = c.operator;
    if (isListOperator(op)) {
      if (!c.values)
        ctx.addIssue({ code: 'custom', path: ['values'], message: `${op} needs a list of strings` });
      return;
    }
    const single = isNumberOperator(op) || isDateOperator(op) || isSemverOperator(op) || op === 'REGEX';
    if (!single) return; // unknown operator: the SDK evaluates the constraint as false
    const value = c.value;
    let problem: string | undefined;
    if (typeof value !== 'string') problem = 'a string';
    else if (isNumberOperator(op) && !isNumeric(value)) problem = 'a number';
    else if (isDateOperator(op) && Number.isNaN(Date.parse(value))) problem = 'a date';
    else if (isSemverOperator(op) && !SEMVER.test(value)) problem = 'a semantic version';
    if (problem)
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${op} needs ${problem} in "value"` });
  });

/**
 * Evaluation passes a payload through untouched, so only its shape is checked: a payload whose
 * value does not parse as its type is one flag's problem (OFREP answers it PARSE_ERROR), never a
 * reason to refuse every other change.
 */
const payload = z.looseObject({ type: z.string().min(1), value: z.string() });

const override = z.looseObject({ contextName: z.string().min(1), values: z.array(z.string()) });

const variant = z.looseObject({
  name: z.string().min(1),
  weight: z.number().nonnegative(),
  weightType: z.string().nullish(),
  stickiness: z.string().nullish(),
  payload: payload.optional(),
  overrides: z.array(override).nullish(),
});

/** The SDK adds the weights up and picks by a hash modulo the total: it must stay an exact number. */
const variants = z
  .array(variant)
  .refine((list) => list.reduce((sum, v) => sum + v.weight, 0) <= Number.MAX_SAFE_INTEGER, {
    message: 'the weights add up to more than a safe integer',
  })
  .nullish();

/** Parameters are strings in the client API; numbers are read with `Number()` and accepted too. */
const parameters = z.record(z.string(), z.union([z.string(), z.number()]));
type Parameters = z.infer<typeof parameters>;

/** Built-in strategies and the parameters their code reads, with what each must be. */
const PERCENTAGE = 'a percentage from 0 to 100';
const STRATEGY_PARAMETERS: Record<string, Record<string, 'percentage' | 'string'>> = {
  flexibleRollout: { rollout: 'percentage' },
  gradualRolloutUserId: { percentage: 'percentage' },
  gradualRolloutSessionId: { percentage: 'percentage' },
  gradualRolloutRandom: { percentage: 'percentage' },
  userWithId: { userIds: 'string' },
  remoteAddress: { IPs: 'string' },
  applicationHostname: { hostNames: 'string' },
};

function checkParameters(
  name: string,
  given: Parameters | null | undefined,
  hasVariants: boolean,
  ctx: z.RefinementCtx,
): void {
  const needed = STRATEGY_PARAMETERS[name];
  if (!given) {
    // the SDK reads `parameters.<name>` (and `parameters.stickiness` for strategy variants)
    if (needed || hasVariants)
      ctx.addIssue({ code: 'custom', path: ['parameters'], message: `strategy ${name} needs "parameters"` });
    return;
  }
  if (given.stickiness !== undefined && typeof given.stickiness !== 'string') {
    ctx.addIssue({
      code: 'custom',
      path: ['parameters', 'stickiness'],
      message: 'stickiness must be a string',
    });
  }
  for (const [key, kind] of Object.entries(needed ?? {})) {
    const value = given[key];
    const ok =
      kind === 'string'
        ? typeof value === 'string'
        : isNumeric(value) && Number(value) >= 0 && Number(value) <= 100;
    if (!ok) {
      const message = `strategy ${name} needs ${kind === 'string' ? 'a string' : PERCENTAGE} in "${key}"`;
      ctx.addIssue({ code: 'custom', path: ['parameters', key], message });
    }
  }
}

const strategy = z
  .looseObject({
    name: z.string().min(1),
    parameters: parameters.nullish(),
    constraints: z.array(constraint).nullish(),
    segments: z.array(z.number().int()).nullish(),
    variants,
  })
  .superRefine((s, ctx) => checkParameters(s.name, s.parameters, (s.variants?.length ?? 0) > 0, ctx));

const dependency = z.looseObject({
  feature: z.string().min(1),
  enabled: z.boolean().nullish(),
  variants: z.array(z.string()).nullish(),
});

export const featureSchema = z.looseObject({
  name: z.string().min(1),
  enabled: z.boolean(),
  project: z.string().nullish(),
  impressionData: z.boolean().nullish(),
  strategies: z.array(strategy),
  variants,
  dependencies: z.array(dependency).nullish(),
});

export const segmentSchema = z.looseObject({
  id: z.number().int(),
  name: z.string().nullish(),
  constraints: z.array(constraint).nullish(),
});

export const clientFeaturesSchema = z
  .looseObject({
    version: z.number().optional(),
    features: z.array(featureSchema),
    segments: z.array(segmentSchema).nullish(),
  })
  .superRefine((response, ctx) => {
    const names = new Set<string>();
    response.features.forEach((f, i) => {
      if (names.has(f.name))
        ctx.addIssue({
          code: 'custom',
          path: ['features', i, 'name'],
          message: 'a second toggle of that name',
        });
      names.add(f.name);
    });
    const ids = new Set<number>();
    (response.segments ?? []).forEach((s, i) => {
      if (ids.has(s.id))
        ctx.addIssue({ code: 'custom', path: ['segments', i, 'id'], message: `a second segment ${s.id}` });
      ids.add(s.id);
    });
    // A strategy naming a segment the answer lacks would be off for everybody (the SDK fails it):
    // Unleash sends every segment its toggles use, so this is an inconsistent answer.
    response.features.forEach((f, i) =>
      f.strategies.forEach((s, j) =>
        (s.segments ?? []).forEach((id, k) => {
          if (!ids.has(id))
            ctx.addIssue({
              code: 'custom',
              path: ['features', i, 'strategies', j, 'segments', k],
              message: `segment ${id} is not in the answer's segments`,
            });
        }),
      ),
    );
  });
