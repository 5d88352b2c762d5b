/**
 * A rendering of metrics that a flood of scrapes cannot multiply: scrapes that arrive while one is
 * being rendered share it, and for `ttlMs` after it completes they get the same text. With `ttlMs`
 * 0 every scrape renders (still one at a time for concurrent ones).
 */
export function cachedRender(render: () => Promise<string>, ttlMs: number): () => Promise<string> {
  let inFlight: Promise<string> | undefined;
  let kept: { text: string; until: number } | undefined;
  return () => {
    if (kept !== undefined && performance.now() < kept.until) return Promise.resolve(kept.text);
    inFlight ??= render().then(
      (text) => {
        inFlight = undefined;
        if (ttlMs > 0) kept = { text, until: performance.now() + ttlMs };
        return text;
      },
      (err: unknown) => {
        inFlight = undefined;
        throw err;
      },
    );
    return inFlight;
  };
}
