-- What SDKs tell the client API: their registrations and their usage counts.

CREATE TABLE client_instances (
  app_name TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  sdk_version TEXT NULL,
  strategies JSONB NOT NULL DEFAULT '[]',
  started TIMESTAMPTZ NULL,
  interval_ms BIGINT NULL,
  registered_at TIMESTAMPTZ NULL,
  last_seen TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (app_name, instance_id)
);

-- Usage counts aggregated per toggle, app and hour (of the bucket start, UTC).
CREATE TABLE client_metrics_hourly (
  feature_name TEXT NOT NULL,
  app_name TEXT NOT NULL,
  hour TIMESTAMPTZ NOT NULL,
  yes BIGINT NOT NULL DEFAULT 0,
  no BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (feature_name, app_name, hour)
);

CREATE TABLE client_metrics_variants_hourly (
  feature_name TEXT NOT NULL,
  app_name TEXT NOT NULL,
  hour TIMESTAMPTZ NOT NULL,
  variant TEXT NOT NULL,
  count BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (feature_name, app_name, hour, variant)
);
