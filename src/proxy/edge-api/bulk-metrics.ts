import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';
import { nameMap } from '../../common/http/data-record';
import {
  clientMetricsSchema,
  clientRegistrationSchema,
  toggleCountsSchema,
  type ClientMetricsPayload,
  type ClientRegistrationPayload,
} from '../client-metrics/schemas';
import { sourceOf, type UsageCall } from '../client-metrics/usage-answers';
import { chainOf } from '../client-metrics/usage-chain';
import { describeIssues } from '../context/schemas';
import { bulkMetricsSchema, type BulkMetrics } from './schemas';

/** A bulk usage request as its gate left it: the scope of a client token, with its environment's name. */
interface BulkCall extends UsageCall {
  readonly scope: UsageCall['scope'] & {
    readonly environment: UsageCall['scope']['environment'] & {
      readonly named: boolean;
      readonly name: string;
    };
  };
}

function parse<T extends z.ZodType>(schema: T, body: unknown, where: string): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error, where)}`);
  return parsed.data;
}

const instantMs = (value: string | number): number => (typeof value === 'number' ? value : Date.parse(value));

interface Group {
  appName: string;
  environment: string | null | undefined;
  start: string | number;
  stop: string | number;
  toggles: Record<string, { yes: number; no: number; variants: Record<string, number> }>;
}

/**
 * The bulk body as the buckets our client usage takes: one per (app, environment), its window the
 * entries' earliest and latest timestamps, counts of the same toggle summed. Entries of another
 * environment than the token's are dropped, as Edge drops them. Every bucket and registration is
 * checked with the schemas of `/client/metrics` and `/client/register` (names, counts, times).
 */
export function bulkToBuckets(
  body: BulkMetrics,
  environment: string | undefined,
): { buckets: ClientMetricsPayload[]; registrations: ClientRegistrationPayload[] } {
  const groups = new Map<string, Group>();
  (body.metrics ?? []).forEach((entry, i) => {
    if (
      environment !== undefined &&
      typeof entry.environment === 'string' &&
      entry.environment !== environment
    )
      return;
    const counts = parse(toggleCountsSchema, entry, `metrics.${i}`);
    const key = JSON.stringify([entry.appName, entry.environment ?? null]);
    let group = groups.get(key);
    if (!group) {
      group = {
        appName: entry.appName,
        environment: entry.environment,
        start: entry.timestamp,
        stop: entry.timestamp,
        toggles: nameMap(),
      };
      groups.set(key, group);
    }
    const at = instantMs(entry.timestamp);
    if (!Number.isFinite(at))
      throw new ValidationError(
        `Invalid request body: metrics.${i}.timestamp must be an ISO 8601 date-time or epoch milliseconds`,
      );
    if (at < instantMs(group.start)) group.start = entry.timestamp;
    if (at > instantMs(group.stop)) group.stop = entry.timestamp;
    const toggle = (group.toggles[entry.featureName] ??= { yes: 0, no: 0, variants: nameMap() });
    toggle.yes = Math.min(toggle.yes + counts.yes, Number.MAX_SAFE_INTEGER);
    toggle.no = Math.min(toggle.no + counts.no, Number.MAX_SAFE_INTEGER);
    for (const [variant, n] of Object.entries(counts.variants ?? {}))
      toggle.variants[variant] = Math.min((toggle.variants[variant] ?? 0) + n, Number.MAX_SAFE_INTEGER);
  });
  const buckets = [...groups.values()].map((g, i) =>
    parse(
      clientMetricsSchema,
      {
        appName: g.appName,
        environment: g.environment,
        bucket: { start: g.start, stop: g.stop, toggles: g.toggles },
      },
      `metrics (app ${i + 1})`,
    ),
  );
  const registrations = (body.applications ?? []).map((a, i) =>
    parse(clientRegistrationSchema, a, `applications.${i}`),
  );
  return { buckets, registrations };
}

/**
 * The answer of `POST {base}/api/client/metrics/bulk`: Unleash Edge's bulk usage from a downstream
 * instance (a client token), validated whole (400 before anything is kept), answered 202, and
 * forwarded upstream with this instance's usage at the metrics interval.
 */
export function bulkMetricsAnswer(req: IncomingMessage, res: Response, call: BulkCall): void {
  const body = parse(bulkMetricsSchema, call.body, '');
  const { environment } = call.scope;
  const { buckets, registrations } = bulkToBuckets(body, environment.named ? environment.name : undefined);
  const usage = environment.clientUsage;
  const source = sourceOf(req);
  const chain = chainOf(req.headers);
  for (const r of registrations) usage.recordRegistration(r, source, chain);
  for (const b of buckets) usage.recordMetrics(b, source, chain);
  res.status(202).end();
}
