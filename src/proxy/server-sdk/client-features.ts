import type { Request, Response } from 'express';
import type { ClientFeaturesResponse } from 'unleash-client';
import { etagMatches, weakEtag } from '../../common/http/etag';
import { addVary } from '../../common/http/vary';
import type { FeatureRepository } from '../upstream/feature-repository';

export interface ClientFeaturesOptions {
  /** The definitions of the request's key scope (the gate's key step found it). */
  featuresOf: (call: { scope: { features: FeatureRepository } }) => FeatureRepository;
  /** The `Vary` of its answers (`KeyVary.clientApi`): the token decides whether and what it reads. */
  vary: string;
}

interface Rendered {
  body: string;
  etag: string;
}

/** Different filters rendered per revision; beyond this the cache starts over. */
const MAX_CACHED_FILTERS = 32;

const single = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** The filters `unleash-client` sends (`project`, `namePrefix`); `tag` cannot be applied here and is ignored. */
function filterOf(req: Request): { project?: string; namePrefix?: string } {
  return { project: single(req.query.project), namePrefix: single(req.query.namePrefix) };
}

/**
 * The answer of `GET {prefix}/proxy/client/features` and `{prefix}/api/client/features`: the client
 * API's `{version: 2, features, segments}` of the definitions the key's scope holds, so a
 * server-side SDK or another proxy can use it as its upstream. Weak ETag; 304 when `If-None-Match`
 * matches. A body is rendered once per revision and filter.
 */
export function clientFeaturesAnswer(
  opts: ClientFeaturesOptions,
): (req: Request, res: Response, call: { scope: { features: FeatureRepository } }) => void {
  // Per repository (a scope's view): the revision its bodies belong to and the bodies per filter.
  const caches = new WeakMap<FeatureRepository, { revision: number; bodies: Map<string, Rendered> }>();

  const render = (source: FeatureRepository, filter: { project?: string; namePrefix?: string }): Rendered => {
    let cache = caches.get(source);
    if (
      cache === undefined ||
      cache.revision !== source.revision ||
      cache.bodies.size >= MAX_CACHED_FILTERS
    ) {
      cache = { revision: source.revision, bodies: new Map() };
      caches.set(source, cache);
    }
    const key = JSON.stringify(filter);
    let rendered = cache.bodies.get(key);
    if (!rendered) {
      const all = source.clientFeatures();
      const features = all.features.filter(
        (f) =>
          (filter.project === undefined || f.project === filter.project) &&
          (filter.namePrefix === undefined || f.name.startsWith(filter.namePrefix)),
      );
      const used = new Set(features.flatMap((f) => (f.strategies ?? []).flatMap((s) => s.segments ?? [])));
      const response: ClientFeaturesResponse = {
        version: 2,
        features,
        segments: (all.segments ?? []).filter((s) => used.has(s.id)),
      };
      const body = JSON.stringify(response);
      rendered = { body, etag: weakEtag(body) };
      cache.bodies.set(key, rendered);
    }
    return rendered;
  };

  return (req, res, call) => {
    const { body, etag } = render(opts.featuresOf(call), filterOf(req));
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'no-cache');
    addVary(res, opts.vary);
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.status(200).end(body);
  };
}
