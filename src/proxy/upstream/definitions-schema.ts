import { z } from 'zod';
import { operandProblem, type OperandProblem } from '../../common/definitions/constraint-operands';
import {
  crossReferenceProblems,
  type CrossReferenceProblem,
} from '../../common/definitions/cross-references';
import { STRATEGY_PARAMETERS } from '../../common/definitions/strategy-parameters';
import {
  constraintFields,
  dependencyFields,
  documentFields,
  featureFields,
  loosened,
  overrideFields,
  payloadFields,
  segmentFields,
  strategyFields,
  variantFields,
} from '../../common/definitions/wire-shape';

/**
 * The documented shape of the client API's definitions (the OpenAPI description of
 * `/proxy/client/features`): the wire fields of `common/definitions/wire-shape.ts`, read loosely
 * (unknown fields kept; every field but a few may be missing or null, as `unleash-client` 6 reads
 * them). It documents; it does not decide what is accepted. The SDK is the arbiter of what
 * definitions mean: `definitions-document.ts` refuses only what is no definitions document, and
 * `toggle-faults.ts` quarantines a toggle whose shape would make evaluation throw.
 */

/** A number written as a string (or a number), as the SDK reads it with `Number(...)`. */
const isNumeric = (value: unknown): boolean =>
  (typeof value === 'number' || (typeof value === 'string' && value.trim() !== '')) &&
  Number.isFinite(Number(value));

const OPERAND_NEEDS: Record<OperandProblem, string> = {
  list: 'a list of strings',
  single: 'a string',
  number: 'a number',
  date: 'a date',
  semver: 'a semantic version',
};

const constraint = z
  .looseObject(loosened(constraintFields, ['contextName', 'operator']))
  .superRefine((c, ctx) => {
    const problem = operandProblem(c);
    if (problem === 'list')
      ctx.addIssue({
        code: 'custom',
        path: ['values'],
        message: `${c.operator} needs ${OPERAND_NEEDS.list}`,
      });
    else if (problem)
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `${c.operator} needs ${OPERAND_NEEDS[problem]} in "value"`,
      });
  });

/**
 * Evaluation passes a payload through untouched, so only its shape is checked: a payload whose
 * value does not parse as its type is one flag's problem (OFREP answers it PARSE_ERROR), never a
 * reason to refuse every other change.
 */
const payload = z.looseObject(payloadFields);

const override = z.looseObject(overrideFields);

const variant = z.looseObject({
  ...loosened(variantFields({ payload, override }), ['name', 'weight']),
  payload: payload.optional(),
});

/** The SDK adds the weights up and picks by a hash modulo the total: it must stay an exact number. */
const variants = z
  .array(variant)
  .refine((list) => list.reduce((sum, v) => sum + v.weight, 0) <= Number.MAX_SAFE_INTEGER, {
    message: 'the weights add up to more than a safe integer',
  });

/** Parameters are strings in the client API; numbers are read with `Number()` and documented too. */
const parameters = z.record(z.string(), z.union([z.string(), z.number()]));
type Parameters = z.infer<typeof parameters>;

const PERCENTAGE = 'a percentage from 0 to 100';

function checkParameters(
  name: string,
  given: Parameters | null | undefined,
  hasVariants: boolean,
  ctx: z.RefinementCtx,
): void {
  const needed = STRATEGY_PARAMETERS.get(name);
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
  if (needed === undefined) return;
  const { name: key, kind } = needed;
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

const strategy = z
  .looseObject({
    ...loosened(strategyFields({ constraint, variants }), ['name']),
    // wider than the wire's strings: the SDK reads numbers too
    parameters: parameters.nullish(),
  })
  .superRefine((s, ctx) => checkParameters(s.name, s.parameters, (s.variants?.length ?? 0) > 0, ctx));

const dependency = z.looseObject(loosened(dependencyFields, ['feature']));

export const featureSchema = z.looseObject(
  loosened(featureFields({ strategy, variants, dependency }), ['name', 'enabled', 'strategies']),
);

export const segmentSchema = z.looseObject(loosened(segmentFields({ constraint }), ['id']));

function crossReferenceMessage(problem: CrossReferenceProblem): string {
  switch (problem.kind) {
    case 'second-name':
      return 'a second toggle of that name';
    case 'second-segment':
      return `a second segment ${problem.id}`;
    case 'missing-segment':
      // A strategy naming a segment the answer lacks would be off for everybody (the SDK fails it):
      // Unleash sends every segment its toggles use, so this is an inconsistent answer.
      return `segment ${problem.id} is not in the answer's segments`;
  }
}

export const clientFeaturesSchema = z
  .looseObject({
    ...loosened(documentFields({ feature: featureSchema, segment: segmentSchema }), ['features']),
    version: z.number().optional(),
  })
  .superRefine((response, ctx) => {
    for (const problem of crossReferenceProblems(response))
      ctx.addIssue({ code: 'custom', path: problem.path, message: crossReferenceMessage(problem) });
  });
