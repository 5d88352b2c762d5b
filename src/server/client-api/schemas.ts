import { z } from 'zod';

/** A time as an ISO 8601 string or epoch milliseconds, as SDKs send it. */
const instant = z.union([
  z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time or epoch milliseconds' }),
  z.number({ error: 'must be an ISO 8601 date-time or epoch milliseconds' }).int().nonnegative(),
]);
const count = z.number().int().nonnegative();
const nonEmpty = z
  .string({ error: 'must be a non-empty string' })
  .trim()
  .min(1, 'must be a non-empty string');

/**
 * `POST /api/client/register`. Unknown fields (connectionId, platformName, specVersion, …, which
 * `unleash-client` v6 sends) are accepted and ignored.
 */
export const registerSchema = z.object({
  appName: nonEmpty,
  instanceId: nonEmpty,
  sdkVersion: z.string().optional(),
  strategies: z.array(z.string()).default([]),
  started: instant.optional(),
  interval: count.optional(),
});

export const toggleCountsSchema = z.object({
  yes: count,
  no: count,
  variants: z.record(z.string(), count).optional(),
});

/** `POST /api/client/metrics`: one bucket of usage counts from one SDK instance. */
export const metricsSchema = z
  .object({
    appName: nonEmpty,
    instanceId: nonEmpty,
    bucket: z.object({
      start: instant,
      stop: instant,
      toggles: z.record(z.string().min(1), toggleCountsSchema),
    }),
  })
  .superRefine((m, ctx) => {
    if (new Date(m.bucket.stop).getTime() < new Date(m.bucket.start).getTime()) {
      ctx.addIssue({ code: 'custom', path: ['bucket', 'stop'], message: 'must not be before bucket.start' });
    }
  });

export type RegisterPayload = z.output<typeof registerSchema>;
export type MetricsPayload = z.output<typeof metricsSchema>;
