import { Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import { NotFoundError } from '../../common/errors/http-errors';
import type { ProxyConfig } from '../config/types';
import type { BackstageSwitches } from '../backstage/backstage-answers';
import { Routes, type Endpoint } from '../http/endpoint';
import { buildOpenApi } from './openapi';

/**
 * `GET {prefix}/docs/openapi.json` and the interactive UI at `{prefix}/docs/openapi`, declared only
 * when `enableOAS` is set. No client key and no readiness needed: the description does not depend
 * on flag definitions.
 */
export function docsEndpoints(
  config: Pick<ProxyConfig, 'proxyBasePath' | 'clientKeysHeaderName' | 'keyVary'> &
    Partial<BackstageSwitches>,
): Endpoint[] {
  const document = buildOpenApi(config);
  const json = JSON.stringify(document);
  const base = `${config.proxyBasePath}/docs`;
  // The page loads the description from `../openapi.json`, relative to `{prefix}/docs/openapi/`.
  const uiOptions = {
    customSiteTitle: 'flags-proxy API',
    swaggerUrl: '../openapi.json',
    swaggerOptions: { persistAuthorization: true },
  };
  // swagger-ui-express's page and assets: Express middleware, run behind the gate as this endpoint's answer
  const ui = Router();
  ui.use(
    `${base}/openapi`,
    ...swaggerUi.serveFiles(undefined, uiOptions),
    swaggerUi.setup(undefined, uiOptions),
  );
  const routes = new Routes()
    .get(`${base}/openapi.json`, (_req, res) => {
      res.status(200).type('application/json; charset=utf-8').send(json);
    })
    .get([`${base}/openapi`, `${base}/openapi/*`], (req, res) => {
      // The UI's assets are relative links, so its page must end with a slash. The redirect is
      // relative too, so it also works behind a reverse proxy that adds a prefix of its own.
      const [path, query] = splitOnce(req.originalUrl, '?');
      if (
        path.toLowerCase().replace(/\/+$/, '') === `${req.baseUrl}${base}/openapi`.toLowerCase() &&
        !path.endsWith('/')
      ) {
        res.redirect(301, `openapi/${query === undefined ? '' : `?${query}`}`);
        return;
      }
      return new Promise<void>((_resolve, reject) => {
        ui(req, res, (err?: unknown) => {
          reject(err ?? new NotFoundError(`No endpoint ${req.method} ${req.path}`));
        });
      });
    });
  return routes.endpoints;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
