import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';
import { nameMap } from '../../common/http/data-record';
import { jsonBody } from '../../common/http/json-body';
import type { ClientUsage } from '../client-metrics/client-usage';
import {
  clientMetricsSchema,
  clientRegistrationSchema,
  toggleCountsSchema,
  type ClientMetricsPayload,
  type ClientRegistrationPayload,
} from '../client-metrics/schemas';
import { chainOf } from '../client-metrics/usage-chain';
import { describeIssues } from '../context/schemas';
import { scopeOf } from '../environments/require-scope';
import { bulkMetricsSchema, type BulkMetrics } from './schemas';

export interface BulkMetricsRouterOptions {
  /** The usage of the request's token's environment. */
  usageOf: (res: Response) => ClientUsage;
  /** The client-token step (sets the scope). */
  auth: RequestHandler;
  maxBodySize: number;
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

/** The client's address (through `trustProxy`): the unit of fairness of the usage bounds. */
const sourceOf = (req: Request): string => req.ip ?? req.socket.remoteAddress ?? '';

/**
 * `POST /client/metrics/bulk` under `{base}/api`: Unleash Edge's bulk usage from a downstream
 * instance (a client token), validated whole (400 before anything is kept), answered 202, and
 * forwarded upstream with this instance's usage at the metrics interval.
 */
export function bulkMetricsRouter(opts: BulkMetricsRouterOptions): Router {
  const router = Router();
  router.post('/client/metrics/bulk', opts.auth, ...jsonBody(opts.maxBodySize), (req, res) => {
    const body = parse(bulkMetricsSchema, req.body, '');
    const scope = scopeOf(res);
    const named = scope.environment.named ? scope.environment.name : undefined;
    const { buckets, registrations } = bulkToBuckets(body, named);
    const usage = opts.usageOf(res);
    const source = sourceOf(req);
    const chain = chainOf(req.headers);
    for (const r of registrations) usage.recordRegistration(r, source, chain);
    for (const b of buckets) usage.recordMetrics(b, source, chain);
    res.status(202).end();
  });
  return router;
}
