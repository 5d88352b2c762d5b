import type { EvaluatedToggle, SdkVariant } from '../upstream/feature-repository';

export const FALLBACK_VARIANT = Object.freeze({ name: 'disabled', enabled: false });

/** A toggle answered disabled with the fallback variant: an unknown name, or an evaluation that threw. */
export function disabledToggle(name: string, impressionData: boolean): EvaluatedToggle {
  return { name, enabled: false, impressionData, variant: FALLBACK_VARIANT };
}

/** The toggle of a response for one SDK answer: the one mapping every evaluation path uses. */
export function toEvaluatedToggle(
  name: string,
  impressionData: boolean,
  result: SdkVariant,
): EvaluatedToggle {
  const variant = result.payload
    ? {
        name: result.name,
        enabled: result.enabled,
        payload: { type: String(result.payload.type), value: result.payload.value },
      }
    : result.name === FALLBACK_VARIANT.name && !result.enabled
      ? FALLBACK_VARIANT
      : { name: result.name, enabled: result.enabled };
  return { name, enabled: Boolean(result.feature_enabled), impressionData, variant };
}

/** One toggle of a response, serialised: the UTF-8 bytes of its JSON. */
export function toggleEntry(toggle: EvaluatedToggle): Buffer {
  return Buffer.from(JSON.stringify(toggle));
}

const HEAD = Buffer.from('{"toggles":[');
const TAIL = Buffer.from(']}');
const COMMA = 0x2c;

/**
 * A toggle list as the response body, `{"toggles":[...]}`, from serialised entries: bytes copied
 * once into one buffer. (Joining strings instead costs several times more for large answers: a
 * string over 128 KiB is allocated apart from the others, and is encoded again when written.)
 */
export function toggleListBody(
  entries: readonly Uint8Array[],
  /** The entries' total length, when the caller counted it. */
  entryBytes?: number,
  allocate?: (length: number) => Buffer,
): Buffer {
  return joinEntries(HEAD, entries, TAIL, allocate, entryBytes);
}

/**
 * `head`, the entries separated by commas, then `tail`: bytes copied once into one buffer, its own
 * memory (not a slice of Node's shared pool, as kept answers live on) or what `allocate` gives.
 */
export function joinEntries(
  head: Uint8Array,
  entries: readonly Uint8Array[],
  tail: Uint8Array,
  allocate: (length: number) => Buffer = Buffer.allocUnsafeSlow,
  /** The entries' total length, when the caller counted it; counted here otherwise. */
  entryBytes?: number,
): Buffer {
  let length = head.length + tail.length + Math.max(0, entries.length - 1);
  if (entryBytes !== undefined) length += entryBytes;
  else for (const entry of entries) length += entry.length;
  const body = allocate(length);
  body.set(head, 0);
  let at = head.length;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) body[at++] = COMMA;
    body.set(entries[i], at);
    at += entries[i].length;
  }
  body.set(tail, at);
  return body;
}
