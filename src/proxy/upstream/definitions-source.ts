import type { ApiResponse } from './sdk/types';

/**
 * A source of definitions other than the upstream's poller (Unleash Edge's offline file): the
 * repository neither polls nor reports usage upstream, and takes every definitions set the source
 * hands it through the same checks as an upstream answer.
 */
export interface DefinitionsSource {
  /** Starts handing definitions to `deliver`: the first set at once, then every change. */
  start(deliver: (definitions: ApiResponse) => Promise<void>): void;
  close(): void;
}
