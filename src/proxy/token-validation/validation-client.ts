import { post } from '../upstream/sdk/modules';
import type { HttpOptions } from '../upstream/sdk/types';
import { z } from 'zod';

/** What the upstream says of one token it knows. */
export interface ValidatedToken {
  readonly token: string;
  /** `frontend`, `client` (Edge also reads `backend`), `admin`; lower case. */
  readonly type: string;
  readonly environment: string | undefined;
  readonly projects: readonly string[];
}

/**
 * Asks the upstream about tokens; resolves with those it confirms, rejects when it cannot answer
 * (with a `ValidationCallError` carrying the HTTP status when there was one).
 */
export type ValidateTokens = (tokens: readonly string[]) => Promise<ValidatedToken[]>;

/** A validation call that got no usable answer; `status` is the upstream's HTTP status, if any. */
export class ValidationCallError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** A 429's `Retry-After`, in seconds. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** Time a validation call may take before it counts as failed (its tokens stay unknown). */
export const VALIDATION_TIMEOUT_MS = 5_000;

/** Unleash's answer: `{"tokens": [{token, type, environment, projects, ...}]}`; unknown fields ignored. */
const answerSchema = z.object({
  tokens: z.array(
    z.object({
      token: z.string(),
      type: z.string().nullish(),
      environment: z.string().nullish(),
      projects: z.array(z.string()).nullish(),
      project: z.string().nullish(),
    }),
  ),
});

/** The upstream's server root: the API URL without its trailing `/api`. */
export function serverRoot(flagsUrl: string): string {
  return flagsUrl.replace(/\/+$/, '').replace(/\/api$/, '');
}

export interface ValidationClientOptions {
  flagsUrl: string;
  appName: string;
  instanceId: string;
  httpOptions: HttpOptions;
  timeoutMs?: number;
  /** CUSTOM_CLIENT_HEADERS; no token travels here. */
  customHeaders?: Readonly<Record<string, string>>;
}

/**
 * `POST <server root>/edge/validate` with `{"tokens": [...]}`, sent without a client or frontend
 * token in `Authorization` (Unleash answers those 403 there). Anything but a 200 with a body of the
 * expected shape is a failure (older and stub upstreams answer 404, Unleash 413 for a body over
 * 100 KB): the caller decides (see `TokenValidator`).
 */
export function validationClient(opts: ValidationClientOptions): ValidateTokens {
  const url = `${serverRoot(opts.flagsUrl)}/edge/validate`;
  return async (tokens) => {
    const res = await post({
      url,
      json: { tokens },
      appName: opts.appName,
      instanceId: opts.instanceId,
      timeout: opts.timeoutMs ?? VALIDATION_TIMEOUT_MS,
      headers: opts.customHeaders,
      httpOptions: opts.httpOptions,
    });
    const text = await res.text();
    if (res.status !== 200) {
      const retryAfter = Number(res.headers.get('retry-after') ?? Number.NaN);
      throw new ValidationCallError(
        `token validation answered HTTP ${res.status}`,
        res.status,
        res.status === 429 && Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ValidationCallError('token validation answered a body that is not JSON');
    }
    const parsed = answerSchema.safeParse(json);
    if (!parsed.success)
      throw new ValidationCallError('token validation answered a body of an unknown shape');
    return parsed.data.tokens.map((t) => ({
      token: t.token,
      type: (t.type ?? '').toLowerCase(),
      environment: t.environment ?? undefined,
      projects: t.projects ?? (t.project ? [t.project] : []),
    }));
  };
}
