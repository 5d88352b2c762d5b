/** What one kept form costs besides its bytes (a Map slot and the Buffer object). */
const FORM_OVERHEAD = 96;

/**
 * Other forms of one kept answer's body, by name (its compressed bytes by content encoding, made by
 * `http/body-encoding.ts` the first time a client asks for that encoding), kept with the answer as
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

  keep(name: string, bytes: Buffer): void {
    if (this.forms.has(name) || !this.grow(bytes.length + FORM_OVERHEAD)) return;
    this.forms.set(name, bytes);
  }
}
