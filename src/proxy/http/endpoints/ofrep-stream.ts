import { STREAM_PATH } from '../../ofrep/bulk-answer';
import { Routes, type Endpoint, type ExpressServe, type KeyPolicy } from '../endpoint';
import { notFound } from './not-found';
import { ofrepErrors } from './ofrep-evaluate';

export interface OfrepStreamOptions {
  /** `{prefix}/ofrep`. */
  basePath: string;
  /** The change stream's key step: a key, or the stream token of one (`ofrepStreamKey`). */
  streamKey: KeyPolicy;
  /** OFREP's evaluation key step: other requests under the evaluation paths ask for it before the 404. */
  key: KeyPolicy;
  changeStream: ExpressServe;
}

/**
 * OFREP beside its two evaluation endpoints (`ofrep-evaluate.ts`), under `{prefix}/ofrep`, all
 * waiting for readiness and answering failures in OFREP's shape: the change stream
 * `GET /v1/flag-changes`, and a 404 for anything else (after the key step under
 * `/v1/evaluate/flags`, so a wrong method there is a 401 without a key, as for the endpoints).
 */
export function ofrepStreamEndpoints(options: OfrepStreamOptions): Endpoint[] {
  const { basePath } = options;
  const rules = { needsReady: true, errors: ofrepErrors };
  const routes = new Routes(rules).get(`${basePath}${STREAM_PATH}`, options.changeStream, {
    key: options.streamKey,
  });
  return [
    ...routes.endpoints,
    notFound([`${basePath}/v1/evaluate/flags`], { ...rules, key: options.key }),
    notFound([basePath], rules),
  ];
}
