/**
 * The headers of a request to the upstream: Unleash Edge's CUSTOM_CLIENT_HEADERS, then the
 * upstream token in `Authorization` when the request carries one. The token wins over a custom
 * header of the same name (in any case): each environment's requests must carry its own token.
 */
export function upstreamHeaders(
  custom: Readonly<Record<string, string>> | undefined,
  token?: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(custom ?? {})) {
    if (token !== undefined && name.toLowerCase() === 'authorization') continue;
    headers[name] = value;
  }
  if (token !== undefined) headers.Authorization = token;
  return headers;
}
