import { z } from 'zod';
import { isListOperator, OPERATORS, SEMVER } from '../../common/definitions/operators';
import { dataRecord, nameMap } from '../../common/http/data-record';

/**
 * The features file: flag definitions in the client-API format that `unleash-client` and the proxy
 * read (`{version, features, segments}`), plus `tags` on features for the `tag` filter. Defaults are
 * filled in so the served payload is complete (`constraints: []`, `inverted: false`, …).
 */
export { OPERATORS } from '../../common/definitions/operators';

const name = z.string().trim().min(1, 'must be a non-empty string');

export const constraintSchema = z
  .object({
    contextName: name,
    operator: z.enum(OPERATORS),
    values: z.array(z.string()).default([]),
    value: z.string().optional(),
    inverted: z.boolean().default(false),
    caseInsensitive: z.boolean().default(false),
  })
  .superRefine((c, ctx) => {
    const op = c.operator;
    const needsValues = isListOperator(op);
    if (needsValues) {
      if (c.values.length === 0)
        ctx.addIssue({
          code: 'custom',
          path: ['values'],
          message: `operator ${op} needs a non-empty "values" list`,
        });
      return;
    }
    if (c.value === undefined) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `operator ${op} needs a single "value"` });
      return;
    }
    if (op.startsWith('NUM_') && !Number.isFinite(Number(c.value))) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `operator ${op} needs a numeric value (got "${c.value}")`,
      });
    }
    if (op.startsWith('DATE_') && Number.isNaN(Date.parse(c.value))) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `operator ${op} needs an ISO date (got "${c.value}")`,
      });
    }
    if (op.startsWith('SEMVER_') && !SEMVER.test(c.value)) {
      ctx.addIssue({
        code: 'custom',
        path: ['value'],
        message: `operator ${op} needs a semantic version such as 1.2.3 (got "${c.value}")`,
      });
    }
    if (op === 'REGEX') {
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
  .object({ type: z.enum(['string', 'json', 'csv', 'number']), value: z.string() })
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

export const variantSchema = z.looseObject({
  name,
  weight: z.number().int().min(0).max(1000),
  weightType: z.enum(['variable', 'fix']).default('variable'),
  stickiness: z.string().min(1).default('default'),
  payload: payloadSchema.optional(),
  overrides: z.array(z.object({ contextName: name, values: z.array(z.string()) })).optional(),
});

export const strategySchema = z
  .looseObject({
    name,
    parameters: dataRecord(z.string(), z.string()).default(() => nameMap<string>()),
    constraints: z.array(constraintSchema).default([]),
    segments: z.array(z.number().int()).optional(),
    variants: z.array(variantSchema).optional(),
    disabled: z.boolean().optional(),
  })
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

export const featureSchema = z.looseObject({
  name,
  type: z.string().default('release'),
  description: z.string().optional(),
  project: name.default('default'),
  enabled: z.boolean(),
  stale: z.boolean().default(false),
  impressionData: z.boolean().default(false),
  strategies: z.array(strategySchema).default([]),
  variants: z.array(variantSchema).default([]),
  dependencies: z
    .array(
      z.looseObject({
        feature: name,
        enabled: z.boolean().optional(),
        variants: z.array(z.string()).optional(),
      }),
    )
    .optional(),
  tags: z.array(tagSchema).default([]),
});

export const segmentSchema = z.looseObject({
  id: z.number().int(),
  name: z.string().optional(),
  constraints: z.array(constraintSchema),
});

export const featuresFileSchema = z
  .object({
    version: z.number().int().optional(),
    features: z.array(featureSchema),
    segments: z.array(segmentSchema).default([]),
  })
  .superRefine((file, ctx) => {
    const names = new Set<string>();
    file.features.forEach((f, i) => {
      if (names.has(f.name))
        ctx.addIssue({
          code: 'custom',
          path: ['features', i, 'name'],
          message: `duplicate feature name "${f.name}"`,
        });
      names.add(f.name);
    });
    const segmentIds = new Set<number>();
    file.segments.forEach((s, i) => {
      if (segmentIds.has(s.id))
        ctx.addIssue({
          code: 'custom',
          path: ['segments', i, 'id'],
          message: `duplicate segment id ${s.id}`,
        });
      segmentIds.add(s.id);
    });
    file.features.forEach((f, i) =>
      f.strategies.forEach((s, j) =>
        (s.segments ?? []).forEach((id, k) => {
          if (!segmentIds.has(id)) {
            ctx.addIssue({
              code: 'custom',
              path: ['features', i, 'strategies', j, 'segments', k],
              message: `segment ${id} is not defined in "segments"`,
            });
          }
        }),
      ),
    );
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
