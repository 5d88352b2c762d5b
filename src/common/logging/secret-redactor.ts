export const REDACTED = '[redacted]';

/**
 * A known secret this long or longer is replaced wherever it occurs in a line. A shorter one ("a",
 * "k1", "pw") is replaced only where it stands as a credential — replacing every "a" would garble
 * every line, and it would not hide anything either.
 */
export const MIN_REDACTED_ANYWHERE = 4;

/** `scheme://userinfo@`: the userinfo of any URL in a line, whoever configured it. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@"'<>\\]*)@/gi;
/** `Authorization: x`, `"authorization":"x"`, `authorization=x`, `Bearer x`. */
const CREDENTIAL_VALUE =
  /\b(authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)(?:(bearer|basic)\s+)?([^\s"',;}\]]+)|\b(bearer)(\s+)([A-Za-z0-9\-._~+/=:]+)/gi;
/** `?token=x`, `&apiKey=x`, `&password=x` in a query string. */
const QUERY_CREDENTIAL = /([?&](?:token|api[-_]?key|key|secret|password|auth)=)[^&\s#"']+/gi;

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function userinfo(_match: string, scheme: string, info: string): string {
  if (info === '') return `${scheme}@`;
  const colon = info.indexOf(':');
  // With a password the user name stays visible (which account); alone it may be the credential.
  return colon >= 0 ? `${scheme}${info.slice(0, colon)}:${REDACTED}@` : `${scheme}${REDACTED}@`;
}

/** Credentials in the positions any line may carry them, whether or not they are configured. */
export function redactCredentialPositions(text: string): string {
  return text
    .replace(URL_USERINFO, userinfo)
    .replace(
      CREDENTIAL_VALUE,
      (
        match: string,
        header: string | undefined,
        separator: string | undefined,
        scheme: string | undefined,
        _value: string | undefined,
        bareScheme: string | undefined,
        space: string | undefined,
      ) => {
        if (header !== undefined)
          return `${header}${separator ?? ''}${scheme ? `${scheme} ` : ''}${REDACTED}`;
        if (bareScheme !== undefined) return `${bareScheme}${space ?? ' '}${REDACTED}`;
        return match;
      },
    )
    .replace(QUERY_CREDENTIAL, `$1${REDACTED}`);
}

/**
 * Removes credentials from log text. Every line loses the userinfo of any URL, the value of an
 * Authorization header or a Bearer/Basic credential, and credential query parameters. On top of that,
 * the configured secrets (tokens, keys, passwords) are replaced: one of `MIN_REDACTED_ANYWHERE`
 * characters or more wherever it occurs (also percent-encoded); a shorter one where it is a whole
 * value — the whole string or a whole field, or a quoted occurrence (`"k1"`, `'k1'`).
 */
export class SecretRedactor {
  private readonly anywhere: RegExp | undefined;
  private readonly quoted: RegExp | undefined;
  private readonly whole: ReadonlySet<string>;

  constructor(secrets: ReadonlyArray<string | undefined>) {
    const known = [...new Set(secrets)].filter((s): s is string => typeof s === 'string' && s !== '');
    const long = new Set<string>();
    for (const secret of known) {
      if (secret.length < MIN_REDACTED_ANYWHERE) continue;
      long.add(secret);
      const encoded = encodeURIComponent(secret);
      if (encoded !== secret) long.add(encoded);
    }
    const short = known.filter((s) => s.length < MIN_REDACTED_ANYWHERE);
    const byLength = (a: string, b: string) => b.length - a.length;
    this.anywhere =
      long.size > 0 ? new RegExp([...long].sort(byLength).map(escapeRegExp).join('|'), 'g') : undefined;
    this.quoted =
      short.length > 0
        ? new RegExp(`(["'\`])(?:${short.sort(byLength).map(escapeRegExp).join('|')})\\1`, 'g')
        : undefined;
    this.whole = new Set(known);
  }

  /** A line of text with every credential replaced by `[redacted]`. */
  text(value: string): string {
    if (this.whole.has(value)) return REDACTED;
    let out = this.anywhere ? value.replace(this.anywhere, REDACTED) : value;
    out = redactCredentialPositions(out);
    return this.quoted ? out.replace(this.quoted, `$1${REDACTED}$1`) : out;
  }

  /** A structured log field (strings, errors, arrays, plain objects) with every string redacted. */
  value(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value);
    if (depth > 5 || value === null || typeof value !== 'object') return value;
    if (value instanceof Error) return this.text(value.stack ?? value.message);
    if (Array.isArray(value)) return value.map((v) => this.value(v, depth + 1));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.value(v, depth + 1)]));
  }
}
