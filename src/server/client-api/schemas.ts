import { z } from 'zod';
import { dataRecord } from '../../common/http/data-record';
import { storedText } from '../http/stored-text';

/** A time as an ISO 8601 string or epoch milliseconds, as SDKs send it. */
const instant = z.union([
  z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time or epoch milliseconds' }),
  z.number({ error: 'must be an ISO 8601 date-time or epoch milliseconds' }).int().nonnegative(),
]);
const count = z.number().int().nonnegative();
/** Names and versions below are stored: a NUL in any of them is a 400 (see stored-text.ts). */
const nonEmpty = storedText('must be a non-empty string').trim().min(1, 'must be a non-empty string');

/**
 * `POST /api/client/register`. Unknown fields (connectionId, platformName, specVersion, …, which
 * `unleash-client` v6 sends) are accepted and ignored.
 */
export const registerSchema = z.object({
  appName: nonEmpty,
  instanceId: nonEmpty,
  sdkVersion: storedText().optional(),
  strategies: z.array(storedText()).default([]),
  started: instant.optional(),
  interval: count.optional(),
});

export const toggleCountsSchema = z.object({
  yes: count,
  no: count,
  variants: dataRecord(storedText(), count).optional(),
});

/**
 * `POST /api/client/metrics`: one bucket of usage counts from one SDK instance. Toggle and variant
 * names are data: `__proto__`, `constructor`, … are kept like any other name (see data-record.ts).
 */
export const metricsSchema = z
  .object({
    appName: nonEmpty,
    instanceId: nonEmpty,
    bucket: z.object({
      start: instant,
      stop: instant,
      toggles: dataRecord(storedText().min(1, 'a toggle name must not be empty'), toggleCountsSchema),
    }),
  })
  .superRefine((m, ctx) => {
    if (new Date(m.bucket.stop).getTime() < new Date(m.bucket.start).getTime()) {
      ctx.addIssue({ code: 'custom', path: ['bucket', 'stop'], message: 'must not be before bucket.start' });
    }
  });

export type RegisterPayload = z.output<typeof registerSchema>;
export type MetricsPayload = z.output<typeof metricsSchema>;
