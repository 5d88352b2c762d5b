import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type RequestListener, type Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface CapturedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface FeaturesPayload {
  version: number;
  features: unknown[];
  segments?: unknown[];
}

/**
 * A client-API upstream served on loopback by the tests: features with ETag/304, register and
 * metrics endpoints, and every request captured. Its answers can be switched to faults.
 */
export class TestUpstream {
  readonly requests: CapturedRequest[] = [];
  private server: Server | undefined;
  private payload: FeaturesPayload;
  /** When set, /client/features answers with this status (and body) instead of the definitions. */
  fault: { status: number; body?: string } | undefined;
  /**
   * While set, /client/features does not answer (a hung upstream); the requests it holds are
   * answered, as the upstream then would, when it is cleared (a hung upstream that recovers).
   */
  get hang(): boolean {
    return this.held !== undefined;
  }
  set hang(on: boolean) {
    if (on) {
      this.held ??= [];
      return;
    }
    const held = this.held ?? [];
    this.held = undefined;
    for (const answer of held) answer();
  }
  private held: Array<() => void> | undefined;
  /** False: /client/features answers every poll in full, without an ETag (never 304). */
  etags = true;
  /** Extra headers of every /client/features answer (e.g. `fetch-mode`). */
  featureHeaders: Record<string, string> = {};
  /**
   * When set, a POST to /client/metrics or /client/register answers with the status it returns
   * (202 when it returns undefined); a 4xx carries a JSON error body, as the flag server's.
   */
  usageStatus: ((path: string, body: unknown) => number | undefined) | undefined;
  /** When set, milliseconds a POST to /client/metrics or /client/register waits before it is answered. */
  usageDelay: ((path: string) => number | undefined) | undefined;
  /** POSTs to /client/metrics answered so far (after any `usageDelay`). */
  metricsAnswered = 0;
  token: string;
  /** More upstream tokens it accepts, each with its own definitions (another environment). */
  private readonly extraTokens = new Map<string, FeaturesPayload>();
  /**
   * Tokens `POST /edge/validate` (at the server root) confirms, as Unleash answers them; the
   * validation endpoint answers `validateFault` instead when set (e.g. 404 of an older upstream).
   */
  readonly knownTokens = new Map<string, { type: string; environment: string; projects: string[] }>();
  validateFault: { status: number; body?: string } | undefined;
  /** When set, a /edge/validate body of more bytes is answered 413, as Unleash (100 KB) does. */
  validateBodyLimit: number | undefined;
  /** When set, /edge/validate never answers (a hung upstream). */
  validateHang = false;
  /** When set, /edge/validate answers only once this settles (a slow upstream the test releases). */
  validateHold: Promise<void> | undefined;
  /** Byte sizes of the /edge/validate bodies received. */
  readonly validateBodySizes: number[] = [];

  constructor(payload: FeaturesPayload, token = 'upstream-token') {
    this.payload = payload;
    this.token = token;
  }

  setFeatures(payload: FeaturesPayload): void {
    this.payload = payload;
  }

  /** Connections refused during the TLS handshake (an https upstream only): e.g. no client certificate. */
  tlsClientErrors = 0;
  private secure = false;

  get url(): string {
    const { port } = this.server?.address() as AddressInfo;
    return `${this.secure ? 'https' : 'http'}://127.0.0.1:${port}/api`;
  }

  /** Accepts `token` too, serving `payload` to it. */
  addToken(token: string, payload: FeaturesPayload): this {
    this.extraTokens.set(token, payload);
    return this;
  }

  /** Stops accepting an extra token: its fetches are answered 401 from now on. */
  removeToken(token: string): void {
    this.extraTokens.delete(token);
  }

  /** The validation calls received, each the list of tokens asked about. */
  validationCalls(): string[][] {
    return this.requests
      .filter((r) => r.method === 'POST' && r.path === '/edge/validate')
      .map((r) => (r.body as { tokens: string[] }).tokens);
  }

  featureRequests(): CapturedRequest[] {
    return this.requests.filter((r) => r.path === '/api/client/features');
  }

  posted(path: string): CapturedRequest[] {
    return this.requests.filter((r) => r.method === 'POST' && r.path === path);
  }

  /** Serves on loopback; with `tls`, over HTTPS with those server options (e.g. `requestCert`). */
  async start(tls?: https.ServerOptions): Promise<this> {
    const handler: RequestListener = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://localhost');
        const raw = Buffer.concat(chunks).toString('utf8');
        let body: unknown = raw;
        try {
          body = raw ? JSON.parse(raw) : undefined;
        } catch {
          /* keep raw text */
        }
        this.requests.push({
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body,
        });
        if (url.pathname === '/edge/validate' && req.method === 'POST') {
          const size = Buffer.byteLength(raw);
          this.validateBodySizes.push(size);
          if (this.validateHang) return;
          const answerValidation = (): void => {
            if (this.validateBodyLimit !== undefined && size > this.validateBodyLimit) {
              res
                .writeHead(413, { 'content-type': 'application/json' })
                .end('{"message":"request entity too large"}');
              return;
            }
            if (this.validateFault) {
              res.writeHead(this.validateFault.status).end(this.validateFault.body ?? '');
              return;
            }
            // Unleash refuses client and frontend tokens here (403); Edge sends none.
            const auth = req.headers.authorization;
            if (auth !== undefined && (auth === this.token || this.knownTokens.has(auth))) {
              res.writeHead(403, { 'content-type': 'application/json' }).end('{"message":"forbidden"}');
              return;
            }
            const asked = (body as { tokens?: unknown } | undefined)?.tokens;
            const tokens = (Array.isArray(asked) ? asked : [])
              .filter((t): t is string => typeof t === 'string' && this.knownTokens.has(t))
              .map((token) => ({ token, ...this.knownTokens.get(token) }));
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ tokens }));
          };
          if (this.validateHold) void this.validateHold.then(answerValidation);
          else answerValidation();
          return;
        }
        const extra = this.extraTokens.get(req.headers.authorization ?? '');
        if (req.headers.authorization !== this.token && extra === undefined) {
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"message":"bad token"}');
          return;
        }
        if (url.pathname === '/api/client/features') {
          const answer = () => {
            if (this.fault) {
              res
                .writeHead(this.fault.status, { 'content-type': 'application/json', ...this.featureHeaders })
                .end(this.fault.body ?? '');
              return;
            }
            const text = JSON.stringify(extra ?? this.payload);
            if (!this.etags) {
              res.writeHead(200, { 'content-type': 'application/json', ...this.featureHeaders }).end(text);
              return;
            }
            const etag = `"${createHash('sha1').update(text).digest('hex')}"`;
            if (req.headers['if-none-match'] === etag) {
              res.writeHead(304, { etag, ...this.featureHeaders }).end();
              return;
            }
            res
              .writeHead(200, { 'content-type': 'application/json', etag, ...this.featureHeaders })
              .end(text);
          };
          if (this.held) this.held.push(() => void (res.destroyed || answer()));
          else answer();
          return;
        }
        if (
          req.method === 'POST' &&
          (url.pathname === '/api/client/metrics' || url.pathname === '/api/client/register')
        ) {
          const status = this.usageStatus?.(url.pathname, body) ?? 202;
          const answer = () => {
            if (url.pathname === '/api/client/metrics') this.metricsAnswered += 1;
            if (status >= 400) {
              res
                .writeHead(status, { 'content-type': 'application/json' })
                .end('{"name":"ValidationError","message":"refused by the test upstream"}');
            } else {
              res.writeHead(status).end();
            }
          };
          const delay = this.usageDelay?.(url.pathname) ?? 0;
          if (delay > 0) setTimeout(answer, delay);
          else answer();
          return;
        }
        res.writeHead(404).end();
      });
    };
    this.secure = tls !== undefined;
    this.server = tls ? https.createServer(tls, handler) : http.createServer(handler);
    this.server.on('tlsClientError', () => (this.tlsClientErrors += 1));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
