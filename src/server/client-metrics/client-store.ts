import { nameMap } from '../../common/http/data-record';
import type { Db } from '../storage/db';

export interface ClientRegistration {
  appName: string;
  instanceId: string;
  sdkVersion?: string;
  strategies: string[];
  started?: Date;
  interval?: number;
}

/** Names (toggles, variants) are keys of null-prototype objects: `__proto__` is a name like any other. */
export interface ToggleCounts {
  yes: number;
  no: number;
  variants?: Record<string, number>;
}

export interface MetricsBucket {
  appName: string;
  instanceId: string;
  start: Date;
  stop: Date;
  toggles: Record<string, ToggleCounts>;
}

/** One row of the hourly aggregate. */
export interface HourlyUsage {
  featureName: string;
  appName: string;
  hour: Date;
  yes: number;
  no: number;
  variants: Record<string, number>;
}

export interface ClientInstance {
  appName: string;
  instanceId: string;
  sdkVersion: string | null;
  strategies: string[];
  started: Date | null;
  interval: number | null;
  lastSeen: Date;
}

/** What SDKs report to the client API: their registrations and their usage counts. */
export interface ClientStore {
  register(registration: ClientRegistration): Promise<void>;
  /** Adds the bucket's counts to the hourly aggregate of each toggle (hour of the bucket start). */
  addMetrics(bucket: MetricsBucket): Promise<void>;
  instances(appName?: string): Promise<ClientInstance[]>;
  usage(filter?: { appName?: string; featureName?: string }): Promise<HourlyUsage[]>;
}

export class PgClientStore implements ClientStore {
  constructor(private readonly db: Db) {}

  async register(r: ClientRegistration): Promise<void> {
    await this.db.query(
      `INSERT INTO client_instances (app_name, instance_id, sdk_version, strategies, started, interval_ms, registered_at, last_seen)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6, now(), now())
       ON CONFLICT (app_name, instance_id) DO UPDATE SET sdk_version = excluded.sdk_version,
         strategies = excluded.strategies, started = excluded.started, interval_ms = excluded.interval_ms,
         registered_at = now(), last_seen = now()`,
      [
        r.appName,
        r.instanceId,
        r.sdkVersion ?? null,
        JSON.stringify(r.strategies),
        r.started?.toISOString() ?? null,
        r.interval ?? null,
      ],
    );
  }

  async addMetrics(bucket: MetricsBucket): Promise<void> {
    const toggles = Object.entries(bucket.toggles).map(([name, c]) => ({ name, yes: c.yes, no: c.no }));
    const variants = Object.entries(bucket.toggles).flatMap(([name, c]) =>
      Object.entries(c.variants ?? {})
        .filter(([, count]) => count > 0)
        .map(([variant, count]) => ({ name, variant, count })),
    );
    const start = bucket.start.toISOString();
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO client_instances (app_name, instance_id) VALUES ($1, $2)
         ON CONFLICT (app_name, instance_id) DO UPDATE SET last_seen = now()`,
        [bucket.appName, bucket.instanceId],
      );
      if (toggles.length > 0) {
        await tx.query(
          `INSERT INTO client_metrics_hourly (feature_name, app_name, hour, yes, no)
           SELECT t.name, $1, date_trunc('hour', $2::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', t.yes, t.no
           FROM jsonb_to_recordset($3::jsonb) AS t(name text, yes bigint, no bigint)
           ON CONFLICT (feature_name, app_name, hour) DO UPDATE
             SET yes = client_metrics_hourly.yes + excluded.yes, no = client_metrics_hourly.no + excluded.no`,
          [bucket.appName, start, JSON.stringify(toggles)],
        );
      }
      if (variants.length > 0) {
        await tx.query(
          `INSERT INTO client_metrics_variants_hourly (feature_name, app_name, hour, variant, count)
           SELECT v.name, $1, date_trunc('hour', $2::timestamptz AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', v.variant, v.count
           FROM jsonb_to_recordset($3::jsonb) AS v(name text, variant text, count bigint)
           ON CONFLICT (feature_name, app_name, hour, variant) DO UPDATE
             SET count = client_metrics_variants_hourly.count + excluded.count`,
          [bucket.appName, start, JSON.stringify(variants)],
        );
      }
    });
  }

  async instances(appName?: string): Promise<ClientInstance[]> {
    const rows = await this.db.query<{
      app_name: string;
      instance_id: string;
      sdk_version: string | null;
      strategies: string[] | string;
      started: Date | string | null;
      interval_ms: number | string | null;
      last_seen: Date | string;
    }>(
      `SELECT app_name, instance_id, sdk_version, strategies, started, interval_ms, last_seen FROM client_instances
       WHERE $1::text IS NULL OR app_name = $1 ORDER BY app_name, instance_id`,
      [appName ?? null],
    );
    return rows.map((r) => ({
      appName: r.app_name,
      instanceId: r.instance_id,
      sdkVersion: r.sdk_version,
      strategies: typeof r.strategies === 'string' ? (JSON.parse(r.strategies) as string[]) : r.strategies,
      started: r.started === null ? null : new Date(r.started),
      interval: r.interval_ms === null ? null : Number(r.interval_ms),
      lastSeen: new Date(r.last_seen),
    }));
  }

  async usage(filter: { appName?: string; featureName?: string } = {}): Promise<HourlyUsage[]> {
    const rows = await this.db.query<{
      feature_name: string;
      app_name: string;
      hour: Date | string;
      yes: number | string;
      no: number | string;
      variants: Record<string, number | string> | string | null;
    }>(
      `SELECT m.feature_name, m.app_name, m.hour, m.yes, m.no,
         (SELECT jsonb_object_agg(v.variant, v.count) FROM client_metrics_variants_hourly v
          WHERE v.feature_name = m.feature_name AND v.app_name = m.app_name AND v.hour = m.hour) AS variants
       FROM client_metrics_hourly m
       WHERE ($1::text IS NULL OR m.app_name = $1) AND ($2::text IS NULL OR m.feature_name = $2)
       ORDER BY m.hour, m.app_name, m.feature_name`,
      [filter.appName ?? null, filter.featureName ?? null],
    );
    return rows.map((r) => {
      const raw =
        typeof r.variants === 'string'
          ? (JSON.parse(r.variants) as Record<string, number | string>)
          : (r.variants ?? {});
      // JSON.parse keeps a `__proto__` key as an own property; copied into a null-prototype object.
      const variants = nameMap<number>();
      for (const [name, count] of Object.entries(raw)) variants[name] = Number(count);
      return {
        featureName: r.feature_name,
        appName: r.app_name,
        hour: new Date(r.hour),
        yes: Number(r.yes),
        no: Number(r.no),
        variants,
      };
    });
  }
}
