import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { ProxyConfig } from '../config/types';
import type { BackstageSwitches } from '../backstage/router';
import { buildOpenApi } from './openapi';

/**
 * `GET {prefix}/docs/openapi.json` and the interactive UI at `{prefix}/docs/openapi`, mounted at
 * `{prefix}/docs` only when `enableOAS` is set. No client key and no readiness needed: the
 * description does not depend on flag definitions.
 */
export function docsRouter(
  config: Pick<ProxyConfig, 'proxyBasePath' | 'clientKeysHeaderName' | 'keyVary'> &
    Partial<BackstageSwitches>,
): Router {
  const document = buildOpenApi(config);
  const json = JSON.stringify(document);
  const router = Router();

  router.get('/openapi.json', (_req, res) => {
    res.status(200).type('application/json; charset=utf-8').send(json);
  });

  // The UI's assets are relative links, so its page must end with a slash. The redirect is
  // relative too, so it also works behind a reverse proxy that adds a prefix of its own.
  router.get('/openapi', (req, res, next) => {
    if (req.originalUrl.split('?')[0].endsWith('/')) {
      next();
      return;
    }
    const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?')) : '';
    res.redirect(301, `openapi/${query}`);
  });
  // The page loads the description from `../openapi.json`, relative to `{prefix}/docs/openapi/`.
  const uiOptions = {
    customSiteTitle: 'flags-proxy API',
    swaggerUrl: '../openapi.json',
    swaggerOptions: { persistAuthorization: true },
  };
  router.use(
    '/openapi',
    ...swaggerUi.serveFiles(undefined, uiOptions),
    swaggerUi.setup(undefined, uiOptions),
  );
  return router;
}
