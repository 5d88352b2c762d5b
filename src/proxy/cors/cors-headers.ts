import { validateHeaderName, validateHeaderValue } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';

/** Distinct `Origin` values remembered; cleared when full, so random origins cannot grow memory. */
const MAX_ORIGINS = 256;
/** Longer `Origin` values are answered but not remembered, so the memo's bytes stay bounded too. */
const MAX_ORIGIN_LENGTH = 512;

/**
 * The headers the app's CORS middleware sets on a simple (non-preflight) GET, remembered per
 * `Origin` value. With the proxy's CORS options (a string, list, boolean or RegExp origin) those
 * headers depend on nothing else, so the front's gate can write them without running the
 * middleware. They are learnt by running that same middleware once per origin against a recording
 * response, so they are its exact output; `undefined` means the middleware did something else
 * (did not pass the request on synchronously, or set a non-string value), and the gate must run it.
 */
export class CorsHeaderMemo {
  private readonly byOrigin = new Map<string | undefined, readonly string[] | null>();

  constructor(private readonly middleware: RequestHandler) {}

  /** A flat `[name, value, name, value, ...]` list, as `res.writeHead` takes. */
  headersFor(origin: string | undefined): readonly string[] | undefined {
    let found = this.byOrigin.get(origin);
    if (found === undefined) {
      found = this.learn(origin);
      if (origin !== undefined && origin.length > MAX_ORIGIN_LENGTH) return found ?? undefined;
      if (this.byOrigin.size >= MAX_ORIGINS) this.byOrigin.clear();
      this.byOrigin.set(origin, found);
    }
    return found ?? undefined;
  }

  private learn(origin: string | undefined): readonly string[] | null {
    const headers = new Map<string, [string, unknown]>();
    const req = { method: 'GET', headers: origin === undefined ? {} : { origin } };
    const res = {
      setHeader(name: string, value: unknown) {
        headers.set(name.toLowerCase(), [name, value]);
        return res;
      },
      getHeader: (name: string) => headers.get(name.toLowerCase())?.[1],
    };
    let passed = false;
    try {
      void this.middleware(req as unknown as Request, res as unknown as Response, (err?: unknown) => {
        passed = err === undefined;
      });
    } catch {
      return null;
    }
    if (!passed) return null;
    const flat: string[] = [];
    for (const [name, value] of headers.values()) {
      if (typeof value !== 'string') return null;
      try {
        validateHeaderName(name);
        validateHeaderValue(name, value);
      } catch {
        return null;
      }
      flat.push(name, value);
    }
    return flat;
  }
}
