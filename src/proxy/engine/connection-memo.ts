import type { Evaluator, Prepared } from './evaluator';

/** Longest query a connection's memo keeps; a longer one is prepared again on every request. */
const MEMO_QUERY_MAX_LENGTH = 1024;

interface Remembered {
  readonly query: string;
  prepared: Prepared;
}

/**
 * What one keep-alive connection asked last: its query string and the request prepared from it
 * (`Evaluator.prepare`). A client revalidating the same URL on its connection then repeats no
 * query parsing, no context building and no digest: its `If-None-Match` meets the derived ETag
 * straight away. One entry per open connection, dropped with the connection, of a query of at most
 * `MEMO_QUERY_MAX_LENGTH` characters. Sound only where the context is a function of the query, the
 * socket's address and the configuration: the raw GET entry's condition, which owns it.
 */
export class ConnectionMemo {
  private readonly last = new WeakMap<object, Remembered>();

  constructor(private readonly evaluator: Evaluator) {}

  /** The request this connection prepared from `query`, refreshed for new definitions or a passed date. */
  recall(connection: object, query: string): Prepared | undefined {
    const remembered = this.last.get(connection);
    if (remembered === undefined || remembered.query !== query) return undefined;
    remembered.prepared = this.evaluator.refresh(remembered.prepared);
    return remembered.prepared;
  }

  keep(connection: object, query: string, prepared: Prepared): void {
    if (query.length <= MEMO_QUERY_MAX_LENGTH) this.last.set(connection, { query, prepared });
  }
}
