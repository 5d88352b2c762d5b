import type { Context } from 'unleash-client';
import { addVary } from '../../../common/http/vary';
import { evaluateWithDetails } from '../../engine/details';
import type { ScopeServing } from '../../environments/environment';
import { originOf, type OfrepBulk, type OfrepScope } from '../../ofrep/bulk-answer';
import { singleFlag, statusOf } from '../../ofrep/bulk';
import { ofrepErrorAnswer, sendJson } from '../../ofrep/errors';
import { flagNotFound, toOfrepResult, type OfrepResult } from '../../ofrep/mapping';
import { ofrepInput } from '../../ofrep/request-input';
import type { Call, Endpoint, ErrorShape, KeyPolicy } from '../endpoint';

export interface OfrepEvaluateOptions {
  /** `{prefix}/ofrep`. */
  basePath: string;
  key: KeyPolicy;
  /** The bulk answer's steps, shared with the change stream's tokens. */
  bulk: OfrepBulk;
  /** What OFREP serves a key's requests from. */
  scopeOf: (serving: ScopeServing) => OfrepScope;
  /** The `Vary` of every answer (`KeyVary.ofrep`). */
  vary: string;
}

/** OFREP's own answers to failures (`ofrep/errors.ts`), the standard shape for the rest. */
export const ofrepErrors: ErrorShape = (err, call) => ofrepErrorAnswer(err, call.path, call.res);

/** The full context of an OFREP request: the body's, checked by `input`, through the scope's context step. */
function contextOf(call: Call, input: ReturnType<typeof ofrepInput>): Context | Promise<Context> {
  const { pipeline } = call.scope;
  return pipeline.synchronous ? pipeline.baseContext(input, call.req) : pipeline.context(input, call.req);
}

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags/{key}` (OpenFeature's single-flag evaluation): the flag's
 * value, variant and reason for the body's context, `FLAG_NOT_FOUND` (404) for a name the key's
 * scope does not have. Never cached by anyone (`Cache-Control: no-store`).
 */
export function ofrepSingleEndpoint(options: OfrepEvaluateOptions): Endpoint {
  const answer = (call: Call, context: Context): void => {
    const key = call.params.key;
    const { features, pipeline } = call.scope;
    // the plan of every other answer; a name it lacks (or the SDK's full evaluation) through details.ts
    const flag = singleFlag(
      features,
      pipeline.evaluator,
      pipeline.prepare({ kind: 'named', names: [key] }, context),
      context,
      key,
    );
    writeCors(call);
    call.res.setHeader('Cache-Control', 'no-store');
    addVary(call.res, options.vary);
    call.bodyFollows();
    if (flag) {
      sendBytes(call, flag.status, flag.body);
      return;
    }
    const details = evaluateWithDetails(features, key, context);
    const result: OfrepResult = details ? toOfrepResult(details) : flagNotFound(key);
    sendJson(call.res, statusOf(result), result);
  };
  return {
    routes: [['POST', `${options.basePath}/v1/evaluate/flags/:key`]],
    needsReady: true,
    ownHeaders: true,
    key: options.key,
    jsonBody: true,
    errors: ofrepErrors,
    serve(call) {
      const context = contextOf(
        call,
        ofrepInput(call.body, call.scope.pipeline.contextLimits, call.params.key),
      );
      if (!(context instanceof Promise)) return answer(call, context);
      return context.then((c) => answer(call, c));
    },
  };
}

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags` (OpenFeature's bulk evaluation): every flag of the key's
 * scope for the body's context, with the change stream to follow (`ofrep/bulk-answer.ts`).
 */
export function ofrepBulkEndpoint(options: OfrepEvaluateOptions): Endpoint {
  const { bulk } = options;
  const answer = (call: Call, context: Context): void => {
    bulk.write(call.req, call.res, {
      cors: call.cors,
      scope: options.scopeOf(call.scope),
      context,
      key: call.key,
      origin: originOfRequest(call),
      basePath: call.mountPath + options.basePath,
    });
  };
  return {
    routes: [['POST', `${options.basePath}/v1/evaluate/flags`]],
    needsReady: true,
    ownHeaders: true,
    key: options.key,
    jsonBody: true,
    errors: ofrepErrors,
    serve(call) {
      const context = contextOf(call, bulk.input(call.body));
      if (!(context instanceof Promise)) return answer(call, context);
      return context.then((c) => answer(call, c));
    },
  };
}

function sendBytes(call: Call, status: number, body: Buffer): void {
  call.res.statusCode = status;
  call.res.setHeader('Content-Type', 'application/json; charset=utf-8');
  call.res.setHeader('Content-Length', String(body.length));
  call.res.end(body);
}

function writeCors(call: Call): void {
  const cors = call.cors;
  for (let i = 0; i < cors.length; i += 2) call.res.setHeader(cors[i], cors[i + 1]);
}

/**
 * `{protocol}://{host}` as Express reads them (`req.protocol`, `req.host`: `trustProxy` applies) on
 * Express's request, else from the connection and the `Host` header.
 */
function originOfRequest(call: Call): string | undefined {
  const req = call.req as { protocol?: string; host?: string };
  if (req.protocol !== undefined) return originOf(req.protocol, req.host);
  const encrypted = (call.req.socket as { encrypted?: boolean }).encrypted === true;
  return originOf(encrypted ? 'https' : 'http', call.req.headers.host);
}
