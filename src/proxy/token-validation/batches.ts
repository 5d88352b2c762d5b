/** `{"tokens":[` and `]}`. */
export const BODY_OVERHEAD = 13;

/** Bytes of the JSON body `{"tokens":[...]}` of a call. */
export function bodyBytes(tokens: readonly string[]): number {
  let bytes = BODY_OVERHEAD - 1;
  for (const token of tokens) bytes += Buffer.byteLength(JSON.stringify(token)) + 1;
  return Math.max(bytes, BODY_OVERHEAD);
}

/** Lists of tokens, each fitting one call: at most `maxTokens` tokens and `maxBytes` of body. */
export function batchesOf(tokens: readonly string[], maxTokens: number, maxBytes: number): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  let bytes = BODY_OVERHEAD - 1;
  for (const token of tokens) {
    const size = Buffer.byteLength(JSON.stringify(token)) + 1;
    if (batch.length > 0 && (batch.length >= maxTokens || bytes + size > maxBytes)) {
      batches.push(batch);
      batch = [];
      bytes = BODY_OVERHEAD - 1;
    }
    batch.push(token);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}
