import { Router } from 'express';
import { etagMatches } from '../../common/http/etag';
import { jsonBody } from '../../common/http/json-body';
import { requireToken } from '../auth/authenticate';
import type { TokenStore } from '../auth/token-store';
import type { ClientStore } from '../client-metrics/client-store';
import type { FeatureSource } from '../features/feature-source';
import { parsePayload } from '../http/validate';
import type { ApiTokenInfo } from '../auth/token-store';
import { clientFeatures, featuresEtag, parseFeatureFilter, withinToken } from './features-query';
import { metricsSchema, registerSchema } from './schemas';

export interface ClientApiDeps {
  tokens: TokenStore;
  features: FeatureSource;
  clients: ClientStore;
  bodyLimit: number;
}

const toDate = (v: string | number) => new Date(v);

/** `/api/client`: what server-side SDKs and the proxy poll and post to. Client tokens only. */
export function clientApiRouter({ tokens, features, clients, bodyLimit }: ClientApiDeps): Router {
  const router = Router();
  router.use(requireToken(tokens, 'client'));

  router.get('/features', (req, res) => {
    // A client token of some projects reads those projects only (a `[]:` token names none in its
    // text and its stored projects say which); `*` reads every project.
    const token = res.locals.apiToken as ApiTokenInfo;
    const filter = withinToken(parseFeatureFilter(req.query as Record<string, unknown>), token.projects);
    const snapshot = features.current();
    const etag = featuresEtag(snapshot, filter);
    res.setHeader('ETag', etag);
    res.setHeader('Cache-Control', 'no-cache');
    // Our own validator: a match is "not modified", also when the request says Cache-Control: no-cache.
    if (etagMatches(req.headers['if-none-match'], etag)) {
      res.status(304).end();
      return;
    }
    res.type('application/json; charset=utf-8').send(JSON.stringify(clientFeatures(snapshot, filter)));
  });

  router.post('/register', ...jsonBody(bodyLimit), async (req, res) => {
    const body = parsePayload(registerSchema, req.body);
    await clients.register({
      appName: body.appName,
      instanceId: body.instanceId,
      sdkVersion: body.sdkVersion,
      strategies: body.strategies,
      started: body.started === undefined ? undefined : toDate(body.started),
      interval: body.interval,
    });
    res.status(202).end();
  });

  router.post('/metrics', ...jsonBody(bodyLimit), async (req, res) => {
    const body = parsePayload(metricsSchema, req.body);
    await clients.addMetrics({
      appName: body.appName,
      instanceId: body.instanceId,
      start: toDate(body.bucket.start),
      stop: toDate(body.bucket.stop),
      toggles: body.bucket.toggles,
    });
    res.status(202).end();
  });

  return router;
}
