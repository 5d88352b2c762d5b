import { z } from 'zod';
import { operandProblem, type OperandProblem } from '../../common/definitions/constraint-operands';
import {
  crossReferenceProblems,
  type CrossReferenceProblem,
} from '../../common/definitions/cross-references';
import { OPERATORS } from '../../common/definitions/operators';
import {
  constraintFields,
  dependencyFields,
  documentFields,
  featureFields,
  overrideFields,
  payloadFields,
  segmentFields,
  strategyFields,
  variantFields,
  type StrictShape,
} from '../../common/definitions/wire-shape';
import { dataRecord, nameMap } from '../../common/http/data-record';

/**
 * The features file: flag definitions in the client-API format that `unleash-client` and the proxy
 * read (`{version, features, segments}`, the wire fields of `common/definitions/wire-shape.ts`),
 * read strictly: every wire field listed in the order the served JSON keeps, names trimmed,
 * operators and payload types from their lists, weights whole permille, and defaults filled in so
 * the served payload is complete (`constraints: []`, `inverted: false`, …); plus the authoring
 * fields Unleash keeps beside them (`tags` on features for the `tag` filter, `type`, `stale`, …).
 */
export { OPERATORS } from '../../common/definitions/operators';

const name = z.string().trim().min(1, 'must be a non-empty string');

/** How the features file words a constraint's operand problem (`operandProblem`). */
const OPERAND_MESSAGES: Record<OperandProblem, (op: string, value: string | undefined) => string> = {
  list: (op) => `operator ${op} needs a non-empty "values" list`,
  single: (op) => `operator ${op} needs a single "value"`,
  number: (op, value) => `operator ${op} needs a numeric value (got "${value}")`,
  date: (op, value) => `operator ${op} needs an ISO date (got "${value}")`,
  semver: (op, value) => `operator ${op} needs a semantic version such as 1.2.3 (got "${value}")`,
};

export const constraintSchema = z
  .object({
    contextName: name,
    operator: z.enum(OPERATORS),
    values: constraintFields.values.default([]),
    value: constraintFields.value.optional(),
    inverted: constraintFields.inverted.default(false),
    caseInsensitive: constraintFields.caseInsensitive.default(false),
  } satisfies StrictShape<typeof constraintFields>)
  .superRefine((c, ctx) => {
    const op = c.operator;
    // strict: an empty list is no list
    const problem = operandProblem({ ...c, values: c.values.length > 0 ? c.values : undefined });
    if (problem) {
      const path = problem === 'list' ? ['values'] : ['value'];
      ctx.addIssue({ code: 'custom', path, message: OPERAND_MESSAGES[problem](op, c.value) });
      return;
    }
    if (op === 'REGEX' && c.value !== undefined) {
      try {
        new RegExp(c.value);
      } catch {
        ctx.addIssue({
          code: 'custom',
          path: ['value'],
          message: `operator REGEX needs a valid regular expression`,
        });
      }
    }
  });

const payloadSchema = z
  .object({
    type: z.enum(['string', 'json', 'csv', 'number']),
    value: payloadFields.value,
  } satisfies StrictShape<typeof payloadFields>)
  .superRefine((p, ctx) => {
    if (p.type === 'json') {
      try {
        JSON.parse(p.value);
      } catch {
        ctx.addIssue({
          code: 'custom',
          path: ['value'],
          message: 'a json payload value must be a JSON-encoded string',
        });
      }
    }
    if (p.type === 'number' && !Number.isFinite(Number(p.value))) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: 'a number payload value must be a number in a string',
      });
    }
  });

const overrideSchema = z.object({
  contextName: name,
  values: overrideFields.values,
} satisfies StrictShape<typeof overrideFields>);

const variantWire = variantFields({ payload: payloadSchema, override: overrideSchema });

export const variantSchema = z.looseObject({
  name,
  weight: z.number().int().min(0).max(1000),
  weightType: z.enum(['variable', 'fix']).default('variable'),
  stickiness: z.string().min(1).default('default'),
  payload: variantWire.payload.optional(),
  overrides: variantWire.overrides.optional(),
} satisfies StrictShape<typeof variantWire>);

const strategyWire = strategyFields({ constraint: constraintSchema, variants: z.array(variantSchema) });

export const strategySchema = z
  .looseObject({
    name,
    parameters: dataRecord(z.string(), z.string()).default(() => nameMap<string>()),
    constraints: strategyWire.constraints.default([]),
    segments: strategyWire.segments.optional(),
    variants: strategyWire.variants.optional(),
    // authoring: a strategy turned off in the file
    disabled: z.boolean().optional(),
  } satisfies StrictShape<typeof strategyWire>)
  .superRefine((s, ctx) => {
    if (s.name === 'flexibleRollout') {
      const rollout = s.parameters.rollout;
      if (rollout === undefined || !/^\d+$/.test(rollout) || Number(rollout) > 100) {
        ctx.addIssue({
          code: 'custom',
          path: ['parameters', 'rollout'],
          message: 'flexibleRollout needs "rollout": a whole percentage from "0" to "100"',
        });
      }
    }
    if (s.name === 'userWithId' && !s.parameters.userIds) {
      ctx.addIssue({
        code: 'custom',
        path: ['parameters', 'userIds'],
        message: 'userWithId needs "userIds": a comma-separated list',
      });
    }
    if (s.name === 'remoteAddress' && !s.parameters.IPs) {
      ctx.addIssue({
        code: 'custom',
        path: ['parameters', 'IPs'],
        message: 'remoteAddress needs "IPs": a comma-separated list',
      });
    }
  });

export const tagSchema = z.object({ type: name, value: name });

const dependencySchema = z.looseObject({
  feature: name,
  enabled: dependencyFields.enabled.optional(),
  variants: dependencyFields.variants.optional(),
} satisfies StrictShape<typeof dependencyFields>);

const featureWire = featureFields({
  strategy: strategySchema,
  variants: z.array(variantSchema),
  dependency: dependencySchema,
});

export const featureSchema = z.looseObject({
  name,
  type: z.string().default('release'), // authoring
  description: z.string().optional(), // authoring
  project: name.default('default'),
  enabled: featureWire.enabled,
  stale: z.boolean().default(false), // authoring
  impressionData: featureWire.impressionData.default(false),
  strategies: featureWire.strategies.default([]),
  variants: featureWire.variants.default([]),
  dependencies: featureWire.dependencies.optional(),
  tags: z.array(tagSchema).default([]), // authoring: read by the `tag` filter, never served
} satisfies StrictShape<typeof featureWire>);

const segmentWire = segmentFields({ constraint: constraintSchema });

export const segmentSchema = z.looseObject({
  id: segmentWire.id,
  name: segmentWire.name.optional(),
  constraints: segmentWire.constraints,
} satisfies StrictShape<typeof segmentWire>);

const documentWire = documentFields({ feature: featureSchema, segment: segmentSchema });

/** How the features file words what `crossReferenceProblems` finds. */
function crossReferenceMessage(problem: CrossReferenceProblem): string {
  switch (problem.kind) {
    case 'second-name':
      return `duplicate feature name "${problem.name}"`;
    case 'second-segment':
      return `duplicate segment id ${problem.id}`;
    case 'missing-segment':
      return `segment ${problem.id} is not defined in "segments"`;
  }
}

export const featuresFileSchema = z
  .object({
    version: documentWire.version.int().optional(),
    features: documentWire.features,
    segments: documentWire.segments.default([]),
  } satisfies StrictShape<typeof documentWire>)
  .superRefine((file, ctx) => {
    for (const problem of crossReferenceProblems(file))
      ctx.addIssue({ code: 'custom', path: problem.path, message: crossReferenceMessage(problem) });
    // strict: a dependency names a feature of the file
    const names = new Set(file.features.map((f) => f.name));
    file.features.forEach((f, i) =>
      (f.dependencies ?? []).forEach((d, j) => {
        if (!names.has(d.feature)) {
          ctx.addIssue({
            code: 'custom',
            path: ['features', i, 'dependencies', j, 'feature'],
            message: `depends on unknown feature "${d.feature}"`,
          });
        }
      }),
    );
  });

export type FeaturesFile = z.infer<typeof featuresFileSchema>;
export type FeatureDefinition = FeaturesFile['features'][number];
export type SegmentDefinition = FeaturesFile['segments'][number];
