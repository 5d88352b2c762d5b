import { hash } from 'node:crypto';

/** Most stream tokens of resolved (not configured) keys remembered, to open their streams. */
const MAX_STREAM_KEYS = 10_000;

/** The keys behind stream tokens handed out in bulk answers (configured keys need no entry). */
export class StreamKeys {
  private readonly keys = new Map<string, string>();

  remember(key: string): string {
    const token = streamToken(key);
    if (!this.keys.has(token)) {
      this.keys.set(token, key);
      if (this.keys.size > MAX_STREAM_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    }
    return token;
  }

  keyOf(token: string): string | undefined {
    return this.keys.get(token);
  }
}

/**
 * The stream token of a client key: what the stream URL carries instead of the key, because a
 * browser's `EventSource` cannot send headers. A one-way digest: it opens change streams only, never
 * evaluates, and does not reveal the key; the same key gives the same token on every replica.
 */
export function streamToken(clientKey: string): string {
  return hash('sha256', `flags-proxy ofrep change stream\u0000${clientKey}`, 'base64url');
}
