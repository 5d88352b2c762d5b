import type { Selection } from '../../engine/evaluator';
import type { EvaluationInput, Listing } from '../../evaluation/pipeline';
import type { Call, Endpoint, KeyPolicy } from '../endpoint';
import { writeReply } from '../write-reply';

export interface ProxyListOptions {
  /** The evaluation paths: `{prefix}/proxy`, `{prefix}/api/frontend`, `{prefix}/api/proxy`. */
  paths: readonly string[];
  key: KeyPolicy;
  /**
   * True when a GET's context is a function of its query, the socket's address and the
   * configuration (no enrichers, no `trustProxy`): a keep-alive connection repeating its query
   * then reuses its prepared request (`engine/connection-memo.ts`).
   */
  memoSound: boolean;
}

const ENABLED: Selection = { kind: 'enabled' };

/**
 * The toggle lists of the specification and of Unleash's frontend API: `GET|POST {path}` (enabled
 * toggles) and `GET|POST {path}/all` (every toggle, 501 unless enabled) for each evaluation path.
 * Input from the query (GET) or the JSON body (POST) → context → selection → evaluation and
 * validator (the scope's pipeline) → the answer of spec 4.2 or a 304.
 */
export function proxyListEndpoint(options: ProxyListOptions): Endpoint {
  const lists = new Set(options.paths.map((p) => p.toLowerCase()));
  return {
    routes: options.paths.flatMap((p) => [
      ['GET', p],
      ['POST', p],
      ['GET', `${p}/all`],
      ['POST', `${p}/all`],
    ]),
    needsReady: true,
    ownHeaders: true,
    key: options.key,
    jsonBody: true,
    serve(call) {
      const listing: Listing = lists.has(call.template) ? 'enabled' : 'all';
      const { pipeline, memo } = call.scope;
      if (call.req.method !== 'POST' && listing === 'enabled' && options.memoSound && pipeline.synchronous) {
        // a connection repeating its query reuses what it prepared last
        let prepared = memo.recall(call.req.socket, call.query);
        if (prepared === undefined) {
          prepared = pipeline.prepare(
            ENABLED,
            pipeline.baseContext(pipeline.fromQuery(call.query), call.req),
          );
          memo.keep(call.req.socket, call.query, prepared);
        }
        answer(call, pipeline.answer(call.req, prepared));
        return;
      }
      const input: EvaluationInput =
        call.req.method === 'POST' ? pipeline.fromBody(call.body) : pipeline.fromQuery(call.query);
      // the path asked for, as Express's mount path named it: `/proxy` of `/proxy/all/`
      const asked = call.path.endsWith('/') ? call.path.slice(0, -1) : call.path;
      const basePath = call.mountPath + (listing === 'all' ? asked.slice(0, -'/all'.length) : asked);
      const selection = pipeline.selection(listing, input, basePath);
      if (pipeline.synchronous) {
        answer(
          call,
          pipeline.answer(call.req, pipeline.prepare(selection, pipeline.baseContext(input, call.req))),
        );
        return;
      }
      return pipeline.context(input, call.req).then((context) => {
        answer(call, pipeline.reply(call.req, selection, context));
      });
    },
  };
}

function answer(call: Call, reply: ReturnType<Call['scope']['pipeline']['answer']>): void {
  writeReply(call.req, call.res, reply, call.scope.pipeline.vary, call.cors);
}
