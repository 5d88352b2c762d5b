import { z } from 'zod';

export {
  EDGE_VALIDATE_BODY_LIMIT,
  MAX_TOKENS_PER_VALIDATION,
  validateTokensSchema,
} from '../../common/edge/validate-request';

/** One confirmed token of the answer: Unleash's fields and Edge's `status`. */
export interface ValidatedEdgeToken {
  token: string;
  /** `frontend` or `client` (Unleash's word; Edge reads it as `backend`). */
  type: 'frontend' | 'client';
  environment: string;
  /** `["*"]` for every project. */
  projects: readonly string[];
  status: 'Validated';
}

/** Most applications and metrics entries of one bulk request (the body limit bounds them too). */
export const MAX_BULK_APPLICATIONS = 1000;
export const MAX_BULK_METRICS = 10_000;

/**
 * `POST /api/client/metrics/bulk`, as a downstream Unleash Edge sends it: registrations and one
 * entry per (app, toggle, environment, hour). Each entry is checked further when it is turned into
 * a bucket (names, counts, times: see `bulk-metrics.ts`); unknown fields are accepted and dropped.
 */
export const bulkMetricsSchema = z.object(
  {
    applications: z
      .array(z.unknown(), { error: 'must be an array of applications' })
      .max(MAX_BULK_APPLICATIONS, `must hold at most ${MAX_BULK_APPLICATIONS} applications`)
      .nullish(),
    metrics: z
      .array(
        z.object(
          {
            featureName: z.string({ error: 'must be a toggle name' }),
            appName: z.string({ error: 'must be an app name' }),
            environment: z.string({ error: 'must be an environment name' }).nullish(),
            timestamp: z.union([z.string(), z.number()], { error: 'must be a date-time' }),
            yes: z.unknown(),
            no: z.unknown(),
            variants: z.unknown().optional(),
          },
          { error: 'must be an object {featureName, appName, environment, timestamp, yes, no, variants?}' },
        ),
        { error: 'must be an array of metrics' },
      )
      .max(MAX_BULK_METRICS, `must hold at most ${MAX_BULK_METRICS} entries`)
      .nullish(),
  },
  { error: 'must be a JSON object {"applications": [...], "metrics": [...]}' },
);

export type BulkMetrics = z.output<typeof bulkMetricsSchema>;
