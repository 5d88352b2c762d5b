/** What one kept form costs besides its bytes (a Map slot and the Buffer object). */
const FORM_OVERHEAD = 96;

/**
 * Other forms of one kept answer's body, by name (its compressed bytes by content encoding, made by
 * `compression/body-encoding.ts` the first time a client asks for that encoding), kept with the answer as
 * long as it is kept: the same context asked again by another client is then not compressed again.
 * Each form is counted against the answer cache's budget through `grow` (the entry's bytes grow);
 * a form it has no room for is only served, not kept.
 */
export class BodyForms {
  private readonly forms = new Map<string, Buffer>();

  constructor(private readonly grow: (bytes: number) => boolean) {}

  get(name: string): Buffer | undefined {
    return this.forms.get(name);
  }

  /**
   * Keeps a copy of `bytes` in memory of its own: what zlib returns is often a slice of a larger
   * buffer (16 KiB for a body of a few hundred bytes), which keeping would hold on to uncounted.
   */
  keep(name: string, bytes: Uint8Array): void {
    if (this.forms.has(name) || !this.grow(bytes.length + FORM_OVERHEAD)) return;
    const own = Buffer.allocUnsafeSlow(bytes.length);
    own.set(bytes);
    this.forms.set(name, own);
  }
}
