import { z } from 'zod';
import { dataRecord } from '../../common/http/data-record';

/** Longest app name, instance id, toggle or variant name accepted; bounds the memory of one entry. */
export const MAX_NAME_LENGTH = 255;
/** Most strategy names one registration may list. */
export const MAX_STRATEGIES = 100;

/** The largest time a JavaScript Date can hold. */
const MAX_EPOCH_MS = 8_640_000_000_000_000;
const INSTANT_MESSAGE = 'must be an ISO 8601 date-time or epoch milliseconds';

/**
 * The window of times usage is accepted for: from 2000-01-01T00:00:00Z to one day after the proxy's
 * clock. Every instant in it is an ISO 8601 date-time with a four-digit year, the form the upstream's
 * client API accepts; the day ahead absorbs clients whose clocks run fast. Anything outside is a 400
 * here, so no bucket is forwarded that the upstream would refuse for its times.
 */
export const EARLIEST_USAGE_TIME = Date.UTC(2000, 0, 1);
export const USAGE_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;
const WINDOW_MESSAGE = `must be a time between ${new Date(EARLIEST_USAGE_TIME).toISOString()} and one day after now`;

/** A time as an ISO 8601 string or epoch milliseconds, as SDKs send it; parsed to epoch ms. */
const instant = z
  .union([
    z.iso.datetime({ offset: true, error: INSTANT_MESSAGE }),
    z
      .number({ error: INSTANT_MESSAGE })
      .int(INSTANT_MESSAGE)
      .nonnegative(INSTANT_MESSAGE)
      .max(MAX_EPOCH_MS, INSTANT_MESSAGE),
  ])
  .transform((v) => (typeof v === 'number' ? v : Date.parse(v)))
  .refine((ms) => ms >= EARLIEST_USAGE_TIME && ms <= Date.now() + USAGE_CLOCK_SKEW_MS, WINDOW_MESSAGE);

const count = z
  .number({ error: 'must be a non-negative integer' })
  .int('must be a non-negative integer')
  .nonnegative('must be a non-negative integer')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

/**
 * A lone surrogate (half of a UTF-16 pair) is no character: it cannot be written as UTF-8, so the
 * upstream could never be sent it. Refused where names enter, never met while forwarding.
 */
const LONE_SURROGATE = /\p{Cs}/u;
const TEXT_MESSAGE = 'must be text (a lone surrogate is not)';
const isText = (value: string): boolean => !LONE_SURROGATE.test(value);

const name = (what: string) =>
  z
    .string({ error: `must be a non-empty ${what}` })
    .trim()
    .min(1, `must be a non-empty ${what}`)
    .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
    .refine(isText, TEXT_MESSAGE);

const optionalName = (what: string) => name(what).nullish();

/** A toggle or variant name: data, kept exactly as sent (never trimmed), any name `__proto__` included. */
const dataName = (what: string) =>
  z
    .string({ error: `must be a non-empty ${what}` })
    .min(1, `must be a non-empty ${what}`)
    .max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`)
    .refine(isText, TEXT_MESSAGE);

export const toggleCountsSchema = z.object(
  {
    yes: count,
    no: count,
    variants: dataRecord(dataName('variant name'), count, 'must be an object of variant counts').nullish(),
  },
  { error: 'must be an object {yes, no, variants?}' },
);

/**
 * `POST {prefix}/proxy/client/metrics`: one bucket of usage counts from one SDK instance, as the
 * frontend SDKs and `unleash-client` send it. Unknown fields (connectionId, platformName,
 * specVersion, impactMetrics, …) are accepted and not forwarded.
 */
export const clientMetricsSchema = z
  .object(
    {
      appName: name('string'),
      instanceId: optionalName('string'),
      environment: optionalName('string'),
      // As Unleash accepts it: a payload without a bucket (or `bucket: null`) carries nothing to forward.
      bucket: z
        .object(
          {
            start: instant,
            stop: instant,
            toggles: dataRecord(
              dataName('toggle name'),
              toggleCountsSchema,
              'must be an object of toggle counts',
            ),
          },
          { error: 'must be an object {start, stop, toggles}' },
        )
        .nullish(),
    },
    { error: 'request body must be a JSON object' },
  )
  .superRefine((m, ctx) => {
    if (m.bucket && m.bucket.stop < m.bucket.start) {
      ctx.addIssue({ code: 'custom', path: ['bucket', 'stop'], message: 'must not be before bucket.start' });
    }
  });

/** `POST {prefix}/proxy/client/register`: an SDK instance announcing itself. */
export const clientRegistrationSchema = z.object(
  {
    appName: name('string'),
    // Optional, as Unleash accepts it; forwarded as `default`, Unleash's own default.
    instanceId: optionalName('string'),
    environment: optionalName('string'),
    sdkVersion: optionalName('string'),
    strategies: z
      .array(name('strategy name'), { error: 'must be an array of strategy names' })
      .max(MAX_STRATEGIES, `must list at most ${MAX_STRATEGIES} strategies`)
      .nullish(),
    started: instant.nullish(),
    interval: count.nullish(),
  },
  { error: 'request body must be a JSON object' },
);

export type ClientMetricsPayload = z.output<typeof clientMetricsSchema>;
export type ClientRegistrationPayload = z.output<typeof clientRegistrationSchema>;
export type ToggleCountsPayload = z.output<typeof toggleCountsSchema>;
