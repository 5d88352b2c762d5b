import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, Request } from 'express';
import type { Context } from 'unleash-client';
import { keyFromHeader } from '../auth/client-key';
import type { FastLaneOptions } from '../evaluation/fast-lane';
import { asExpress, bodyLaneEntry, passOn, readBody, strictJson } from '../evaluation/lane-body';
import { routeTemplate } from '../prometheus/request-metrics';
import { originOf, type OfrepBulk, type OfrepScope } from './bulk-answer';

export interface OfrepBulkLaneOptions extends Pick<
  FastLaneOptions,
  'features' | 'clientKeysHeaderName' | 'enabled' | 'requestMetrics' | 'cors' | 'bodyResponse' | 'onError'
> {
  /** Where the OFREP router is mounted: `{prefix}/ofrep`. */
  basePath: string;
  /** The bulk pipeline the router's bulk route calls (`ofrepEndpoints(...).bulk`). */
  bulk: OfrepBulk;
  /** Largest body the route parses (`maxBodySize`); a larger one goes to Express for its 413. */
  maxBodySize: number;
  /**
   * The key step, synchronously: what serves a key when it is accepted without waiting and its
   * environment serves now (what the route's key middleware would find for it); undefined for
   * anything else (refused, to be asked upstream, an environment that cannot serve): Express answers.
   */
  resolve: (key: string, connection: object) => OfrepScope | undefined;
}

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/** The bulk evaluation path under the OFREP router's mount path. */
const BULK_PATH = '/v1/evaluate/flags';

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags` (OpenFeature's bulk evaluation) without Express's router
 * and body parser: an entry, not a copy. It runs the app's CORS headers, compression and request
 * metrics, the synchronous key step, then the route's own steps (`OfrepBulk.input`, the scope's
 * context step, `OfrepBulk.write`). It answers only what it reads exactly as the route would:
 *
 * - exactly that path, no query string, not mounted in another app; the proxy ready;
 * - a plain JSON body (`post-lane.ts`'s rule: `application/json`, UTF-8, no content or transfer
 *   coding, a `Content-Length` within `maxBodySize`) that parses to an object or array whose
 *   context OFREP accepts;
 * - a `Host` header (the stream URL names it, as Express's `req.host` reads it without `trustProxy`);
 * - CORS that passes synchronously;
 * - a key in the configured header (plain or `Bearer`) that the key step accepts synchronously for
 *   an environment that serves now. The route's key middleware tries that header first and stops at
 *   the first accepted key, so `Authorization` or `X-API-Key` beside it change nothing; a request
 *   whose accepted key would come from one of those goes to Express.
 *
 * Anything else (another key form, a wrong or missing key, a JSON or validation error, not ready)
 * goes to Express, a body already read put back in front of the request stream first, so it is
 * answered in OFREP's own shapes as if the lane were not there (`test/proxy/ofrep/bulk-lane.test.ts`
 * compares the two).
 */
export function installOfrepBulkLane(app: Express, options: OfrepBulkLaneOptions): void {
  if (!options.enabled) return;
  const path = `${options.basePath}${BULK_PATH}`;
  const route = routeTemplate(options.basePath, BULK_PATH);
  const { bulk, requestMetrics } = options;
  const target = app as unknown as { handle: Handle };
  const handle = target.handle.bind(app);
  target.handle = (req, res, callback) => {
    if (!answer(req, res, () => handle(req, res, callback))) handle(req, res, callback);
  };

  /** False when Express is to take the request untouched; true when the lane took it. */
  function answer(raw: IncomingMessage, res: ServerResponse, toExpressRoute: () => void): boolean {
    if (raw.method !== 'POST' || raw.url !== path) return false;
    const entry = bodyLaneEntry(raw, options);
    if (entry === undefined) return false;
    const { length, cors } = entry;
    const req = raw as Request;
    const { headers } = raw;
    const host = headers.host;
    if (!host) return false;
    const key = keyFromHeader(headers[options.clientKeysHeaderName]);
    if (!key) return false;
    const scope = options.resolve(key, raw.socket);
    // with enrichers the context step is asynchronous (and the lanes are off anyway)
    if (scope === undefined || !scope.pipeline.synchronous) return false;
    const startedAt = performance.now();
    // recorded as the app's metrics middleware does, from here (also for a request aborted meanwhile)
    const record = () => requestMetrics.record('POST', route, res.statusCode, startedAt);
    res.once('close', record);
    readBody(raw, length, (body) => {
      const context = contextOf(scope, body, raw);
      if (context === undefined) {
        // Express reads the same bytes and gives its own answer (and records it)
        res.removeListener('close', record);
        raw.unshift(body);
        toExpressRoute();
        return;
      }
      try {
        for (let i = 0; i < cors.length; i += 2) res.setHeader(cors[i], cors[i + 1]);
        passOn(options.bodyResponse, req, res, 'OFREP bulk lane');
        const protocol = (raw.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
        const origin = originOf(protocol, host);
        bulk.write(raw, res, { scope, context, key, origin, basePath: options.basePath });
      } catch (err) {
        options.onError(err, req, asExpress(app, req, res), () => undefined);
      }
    });
    return true;
  }

  /** The route's context of a body, or undefined when the route would refuse the body (Express answers). */
  function contextOf(scope: OfrepScope, body: Buffer, raw: IncomingMessage): Context | undefined {
    const parsed = strictJson(body);
    if (parsed === undefined) return undefined;
    try {
      return scope.pipeline.baseContext(bulk.input(parsed), raw);
    } catch {
      return undefined;
    }
  }
}
