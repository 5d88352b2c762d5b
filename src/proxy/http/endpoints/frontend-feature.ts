import type { Context } from 'unleash-client';
import { NotFoundError } from '../../../common/errors/http-errors';
import { bodyEtag } from '../../engine/etag';
import type { Call, Endpoint, KeyPolicy } from '../endpoint';
import { writeReply } from '../write-reply';

/**
 * `GET|POST {prefix}/api/frontend/features/{name}` (Unleash's frontend API): the one toggle, when
 * it is enabled for the context, evaluated and counted as a list naming only it is
 * (`Evaluator.toggle`); a 404 otherwise, the same for a disabled and an unknown name, so a key
 * holder learns nothing about names it cannot see. A 200 carries `Cache-Control` and a weak ETag
 * of its body, and a matching `If-None-Match` is a 304.
 */
export function frontendFeatureEndpoint(frontendPath: string, key: KeyPolicy): Endpoint {
  const path = `${frontendPath}/features/:name`;
  return {
    routes: [
      ['GET', path],
      ['POST', path],
    ],
    needsReady: true,
    ownHeaders: true,
    key,
    jsonBody: true,
    serve(call) {
      const { pipeline } = call.scope;
      const input =
        call.req.method === 'POST' ? pipeline.fromBody(call.body) : pipeline.fromQuery(call.query);
      if (pipeline.synchronous) {
        answer(call, pipeline.baseContext(input, call.req));
        return;
      }
      return pipeline.context(input, call.req).then((context) => answer(call, context));
    },
  };
}

function answer(call: Call, context: Context): void {
  const { pipeline } = call.scope;
  const name = call.params.name;
  const toggle = pipeline.evaluator.toggle(pipeline.prepare({ kind: 'named', names: [name] }, context), name);
  if (!toggle?.enabled)
    throw new NotFoundError(`Feature "${name}" is not enabled for this context, or does not exist`);
  const body = toggle.entry;
  const etag = bodyEtag(body);
  const notModified = pipeline.matches(call.req, etag);
  writeReply(
    call.req,
    call.res,
    notModified ? { notModified, etag } : { notModified, body, etag },
    pipeline.vary,
    call.cors,
  );
}
