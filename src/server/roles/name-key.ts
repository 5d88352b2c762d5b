/**
 * The key role names are compared by: two names with the same key look alike and cannot both exist.
 *
 * - default-ignorable code points (variation selectors, the combining grapheme joiner, Hangul
 *   fillers, zero-width characters, the soft hyphen, …) are removed, before and after normalising;
 * - NFKC normalisation (NFC and NFD spellings of `é` are one name, compatibility forms fold);
 * - every white-space character (NBSP, the ideographic space, …) and the braille blank U+2800 are a
 *   space, runs of spaces are one, and the ends are trimmed;
 * - case is ignored, as before (lower case).
 */
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const BLANKS = /[\p{White_Space}\u2800]+/gu;

export function roleNameKey(name: string): string {
  return name
    .replace(IGNORABLE, '')
    .normalize('NFKC')
    .replace(IGNORABLE, '')
    .toLowerCase()
    .normalize('NFKC')
    .replace(BLANKS, ' ')
    .trim();
}
