import type { AuthenticationRequired } from '../../common/errors/http-errors';
import { NotReady } from '../../common/errors/http-errors';
import type { ScopeServing } from './environment';
import type { KeyKind, KeyScopes } from './key-scopes';

/** 503 for a key whose environment's upstream token is refused (the other environments keep serving). */
export function environmentRefused(serving: ScopeServing): NotReady | undefined {
  if (serving.environment.isServing()) return undefined;
  return new NotReady(
    `flags-proxy cannot serve environment "${serving.environment.name}" now: the upstream refused its token or it has not synchronised yet`,
  );
}

/** Where a key step looks for a key, which kind it must be, and its refusals (`http/key-policies.ts`). */
export interface RequireScopeOptions {
  keys: KeyScopes;
  /** Where a key is looked for and which kind it must be, tried in order until one is accepted. */
  attempts: ReadonlyArray<{ header: string; kind: KeyKind }>;
  /** The refusal without any key, and with keys that are all refused (built once). */
  missing: AuthenticationRequired;
  invalid: AuthenticationRequired;
  /** Accept a key whose environment cannot be served now (a metrics scrape reports that state). */
  whileUnserved?: boolean;
}
