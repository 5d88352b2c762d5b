import unhomoglyph from 'unhomoglyph';

/**
 * The keys role names are compared by: two names with the same `folded` key or the same `cased` key
 * look alike and cannot both exist.
 *
 * Both start from the visible form of the name:
 * - default-ignorable code points (variation selectors, the combining grapheme joiner, Hangul
 *   fillers, zero-width characters, the soft hyphen, …) are removed, before and after normalising;
 * - NFKC normalisation (NFC and NFD spellings of `é` are one name, compatibility forms such as
 *   full-width letters fold);
 * - every white-space character (NBSP, the ideographic space, …) and the braille blank U+2800 are a
 *   space, runs of spaces are one, and the ends are trimmed.
 *
 * Then the confusable skeleton (Unicode TR39): NFD, and every character confusable with another
 * mapped to its prototype, with the table of Unicode's `confusables.txt` (the `unhomoglyph`
 * package): Cyrillic `а` and Greek `α` are `a`, `0` is `O`, `1` and `I` are `l`, `m` is `rn`. A
 * skeleton is a key, never shown. Case is ignored in two orders, as each catches look-alikes the other
 * cannot:
 * - `folded`: lower case, skeleton, lower case, skeleton — `Admin`, `ADMIN`, `Аdmin` (Cyrillic А);
 * - `cased`: first every non-ASCII character mapped to its prototype as written, then as `folded`.
 *   This catches capitals that look Latin while their small letters do not: Cyrillic `М` (small
 *   `м`), Greek `Ε` (small `ε`) in `Мember`, `ΕDITOR`. ASCII is left to `folded`'s order, so a name
 *   in ASCII has both keys equal (`I` stays the capital of `i` instead of becoming `l`: ignoring case
 *   comes first, so Latin `I` and `l` stay distinct).
 * Two names clash when their `folded` keys or their `cased` keys are equal.
 */
export interface RoleNameKeys {
  folded: string;
  cased: string;
}

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu;
const BLANKS = /[\p{White_Space}\u2800]+/gu;

/** The name as it shows: without invisible characters, NFKC, blanks folded and trimmed; case kept. */
export function roleNameVisible(name: string): string {
  return name.replace(IGNORABLE, '').normalize('NFKC').replace(IGNORABLE, '').replace(BLANKS, ' ').trim();
}

const skeleton = (s: string) => unhomoglyph(s.normalize('NFD')).normalize('NFD');
const lower = (s: string) => s.toLowerCase().normalize('NFKC').replace(IGNORABLE, '');
const fold = (s: string) => skeleton(lower(skeleton(lower(s))));
const isAscii = (c: string) => (c.codePointAt(0) ?? 0) < 0x80;
/**
 * Non-ASCII characters mapped to their prototype as written. A capital whose prototype is `l` (Greek
 * `Ι`, Cyrillic `І`, Roman numeral `Ⅰ`: the table maps them as it maps Latin `I`, to `l`) is the
 * capital `I` here, so that lower case makes it `i` as for Latin `I`.
 */
const prototypesAsWritten = (s: string) =>
  [...s.normalize('NFD')]
    .map((c) => {
      if (isAscii(c)) return c;
      const prototype = unhomoglyph(c);
      return prototype === 'l' && c !== c.toLowerCase() ? 'I' : prototype;
    })
    .join('');

export function roleNameKeys(name: string): RoleNameKeys {
  const visible = roleNameVisible(name);
  return { folded: fold(visible), cased: fold(prototypesAsWritten(visible)) };
}

/** The `folded` key of a name (see RoleNameKeys). */
export function roleNameKey(name: string): string {
  return roleNameKeys(name).folded;
}
