import { createHash } from 'node:crypto';
import { ValidationError } from '../../common/errors/http-errors';
import type { FeatureSnapshot } from '../features/feature-source';
import type { FeatureDefinition, SegmentDefinition } from '../features/schema';

/** The filters of `GET /api/client/features`. */
export interface FeatureFilter {
  namePrefix?: string;
  /** `type:value` pairs; a feature matches when it has at least one of them. */
  tags: Array<{ type: string; value: string }>;
  /** A feature matches when it belongs to any of these projects. */
  projects: string[];
  /** The projects the client token may read; undefined for every project (`*`). */
  allowed?: readonly string[];
}

/** The filter limited to what the token may read: its projects, as Unleash limits a client token. */
export function withinToken(filter: FeatureFilter, tokenProjects: readonly string[]): FeatureFilter {
  if (tokenProjects.length === 0 || tokenProjects.includes('*')) return filter;
  return { ...filter, allowed: [...tokenProjects].sort() };
}

type Query = Record<string, unknown>;

function strings(query: Query, name: string): string[] {
  const raw = query[name];
  if (raw === undefined) return [];
  const values = Array.isArray(raw) ? raw : [raw];
  if (!values.every((v): v is string => typeof v === 'string')) {
    throw new ValidationError(`Query parameter "${name}" must be a plain string`);
  }
  return values.map((v) => v.trim()).filter((v) => v !== '');
}

/** Reads the filters from the query string; malformed ones are a 400 naming the parameter. */
export function parseFeatureFilter(query: Query): FeatureFilter {
  const prefixes = strings(query, 'namePrefix');
  if (prefixes.length > 1) throw new ValidationError('Query parameter "namePrefix" may be given only once');
  const tags = strings(query, 'tag')
    .flatMap((entry) => entry.split(','))
    .map((entry) => {
      const colon = entry.indexOf(':');
      if (colon <= 0 || colon === entry.length - 1) {
        throw new ValidationError(`Query parameter "tag" must look like type:value (got "${entry}")`);
      }
      return { type: entry.slice(0, colon).trim(), value: entry.slice(colon + 1).trim() };
    });
  const projects = strings(query, 'project').flatMap((p) =>
    p
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
  return { namePrefix: prefixes[0], tags, projects };
}

function matches(feature: FeatureDefinition, filter: FeatureFilter): boolean {
  if (filter.namePrefix !== undefined && !feature.name.startsWith(filter.namePrefix)) return false;
  if (filter.projects.length > 0 && !filter.projects.includes(feature.project)) return false;
  if (filter.allowed !== undefined && !filter.allowed.includes(feature.project)) return false;
  if (
    filter.tags.length > 0 &&
    !filter.tags.some((t) => feature.tags.some((ft) => ft.type === t.type && ft.value === t.value))
  ) {
    return false;
  }
  return true;
}

/**
 * The body of `GET /api/client/features`: the client-API format, `tags` left out, and only the
 * segments the served features use.
 */
export interface ClientFeaturesBody {
  version: 2;
  features: Array<Omit<FeatureDefinition, 'tags'>>;
  segments: SegmentDefinition[];
}

export function clientFeatures(snapshot: FeatureSnapshot, filter: FeatureFilter): ClientFeaturesBody {
  const features = snapshot.features.filter((f) => matches(f, filter));
  const used = new Set(features.flatMap((f) => f.strategies.flatMap((s) => s.segments ?? [])));
  return {
    version: 2,
    features: features.map(({ tags: _tags, ...rest }) => rest),
    segments: snapshot.segments.filter((s) => used.has(s.id)),
  };
}

/** Weak ETag from the definitions' revision (content hash) and the filters. */
export function featuresEtag(snapshot: FeatureSnapshot, filter: FeatureFilter): string {
  const normalized = JSON.stringify([
    filter.namePrefix ?? null,
    filter.tags.map((t) => `${t.type}:${t.value}`).sort(),
    [...filter.projects].sort(),
    filter.allowed ?? null,
  ]);
  const filterHash = createHash('sha256').update(normalized).digest('base64url').slice(0, 8);
  return `W/"${snapshot.contentHash}-${filterHash}"`;
}
