import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { rootCertificates } from 'node:tls';

type Env = Record<string, string | undefined>;

/** Well under the 10 s Edge's chart gives its exec probes. */
export const PROBE_TIMEOUT_MS = 3000;
/** An answer larger than this is not a status document. */
const MAX_ANSWER_BYTES = 64 * 1024;

const EXPECTED = { health: 'OK', ready: 'READY' } as const;

export interface ProbeResult {
  ok: boolean;
  /** One line: what was asked and what came back. */
  line: string;
}

/**
 * The instance asked: `EDGE_URL` (`--edge-url`), else this container's own listener, as Edge's
 * default `http://localhost:3063` with the `PORT` and base path the container is configured with
 * (an exec probe runs with the container's environment).
 */
export function probeTarget(env: Env, endpoint: 'health' | 'ready'): string {
  const given = env.EDGE_URL !== undefined && env.EDGE_URL !== '' ? env.EDGE_URL : undefined;
  let base = given;
  if (base === undefined) {
    const port = env.PORT !== undefined && env.PORT !== '' ? env.PORT : env.PROXY_PORT || '3063';
    const path = (env.PROXY_BASE_PATH || env.BASE_PATH || '').replace(/^\/*/, '/').replace(/\/+$/, '');
    base = `http://localhost:${port}${path === '/' ? '' : path}`;
  }
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/internal-backstage/${endpoint}`;
  return url.toString();
}

/**
 * Unleash Edge's `health` and `ready` commands: GET `/internal-backstage/health|ready` of the
 * instance and succeed only on `{"status":"OK"}` / `{"status":"READY"}`, within PROBE_TIMEOUT_MS,
 * without starting anything. `CA_CERTIFICATE_FILE` (`--ca-certificate-file`) is trusted for an
 * `https://` instance, beside the system's CAs.
 */
export async function probe(endpoint: 'health' | 'ready', env: Env): Promise<ProbeResult> {
  let target: string;
  try {
    target = probeTarget(env, endpoint);
  } catch {
    return { ok: false, line: `EDGE_URL is not a URL: expected e.g. http://localhost:3063` };
  }
  const caFile = env.CA_CERTIFICATE_FILE || undefined;
  let ca: Buffer | undefined;
  if (caFile !== undefined) {
    try {
      ca = readFileSync(caFile);
    } catch (err) {
      const why = err instanceof Error && 'code' in err ? String(err.code) : 'unreadable';
      return { ok: false, line: `CA_CERTIFICATE_FILE ${caFile} cannot be read (${why})` };
    }
  }
  const answer = await get(target, ca);
  if ('error' in answer) return { ok: false, line: `${target}: ${answer.error}` };
  let status: unknown;
  try {
    status = (JSON.parse(answer.body) as { status?: unknown }).status;
  } catch {
    status = undefined;
  }
  const ok = answer.status === 200 && status === EXPECTED[endpoint];
  const shown = answer.body.length > 200 ? `${answer.body.slice(0, 200)}…` : answer.body;
  return {
    ok,
    line: `${target} answered ${answer.status} ${shown.trim()}${ok ? '' : ` (expected 200 {"status":"${EXPECTED[endpoint]}"})`}`,
  };
}

function get(
  target: string,
  ca: Buffer | undefined,
): Promise<{ status: number; body: string } | { error: string }> {
  return new Promise((resolve) => {
    const url = new URL(target);
    const client = url.protocol === 'https:' ? https : http;
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      resolve({ error: `EDGE_URL must be http:// or https://` });
      return;
    }
    const timer = setTimeout(() => {
      req.destroy();
      resolve({ error: `no answer within ${PROBE_TIMEOUT_MS / 1000} s` });
    }, PROBE_TIMEOUT_MS);
    const req = client.get(
      url,
      {
        agent: false,
        headers: { accept: 'application/json' },
        ...(ca ? { ca: [...rootCertificates, ca.toString('utf8')] } : {}),
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
          if (body.length > MAX_ANSWER_BYTES) res.destroy();
        });
        res.on('end', () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body });
        });
        res.on('error', () => undefined); // followed by 'close'
        res.on('close', () => {
          clearTimeout(timer);
          resolve({ error: 'the answer was cut short' });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ error: err.code ?? err.message });
    });
  });
}
