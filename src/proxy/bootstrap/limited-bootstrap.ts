import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { ClientFeaturesResponse } from 'unleash-client';
import { readChecked } from '../../common/files/checked-read';
import { resolveBootstrapProvider, buildHeaders } from '../upstream/sdk/modules';
import type { BootstrapOptions, BootstrapProvider } from '../upstream/sdk/types';

/** As long as the SDK's own bootstrap request may take. */
const TIMEOUT_MS = 10_000;

const OPTION = 'maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES)';

function tooLarge(what: string, bytes: number | string, maxBytes: number): Error {
  return new Error(`${what} is ${bytes} bytes, above ${OPTION} = ${maxBytes}; ignoring it`);
}

function parse(what: string, text: string): ClientFeaturesResponse {
  try {
    return JSON.parse(text) as ClientFeaturesResponse;
  } catch {
    throw new Error(`${what} is not JSON; ignoring it`);
  }
}

/**
 * Reads a bootstrap file through one handle checked before reading (`common/files/checked-read`): a
 * FIFO, a device or a file above the limit is refused, never read into memory.
 */
async function readFile(filePath: string, maxBytes: number): Promise<ClientFeaturesResponse> {
  const read = await readChecked(filePath, { maxBytes, limitName: OPTION });
  if ('refused' in read)
    throw new Error(`the bootstrap file ${read.refused.replace(/^it /, '')}; ignoring it`);
  return parse('the bootstrap file', read.bytes.toString('utf8'));
}

/**
 * GETs a bootstrap URL with the headers the SDK would send, reading at most `maxBytes` of its body:
 * a larger `Content-Length` is refused before the body is read, and a body that grows past the bound
 * is cut. A non-2xx answer is no bootstrap, as in the SDK.
 */
function fetchUrl(
  url: string,
  headers: Record<string, string>,
  maxBytes: number,
): Promise<ClientFeaturesResponse | undefined> {
  const what = "the bootstrap URL's answer";
  return new Promise((resolve, reject) => {
    const client = new URL(url).protocol === 'https:' ? https : http;
    const req = client.get(url, { headers, timeout: TIMEOUT_MS }, (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        return resolve(undefined);
      }
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > maxBytes) {
        res.destroy();
        return reject(tooLarge(what, declared, maxBytes));
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > maxBytes) {
          res.destroy();
          reject(tooLarge(what, `more than ${maxBytes}`, maxBytes));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        try {
          resolve(parse(what, Buffer.concat(chunks).toString('utf8')));
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`the bootstrap URL did not answer in ${TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

/**
 * The SDK's bootstrap provider with a size limit on what it reads (`maxStoredDefinitionsBytes`): a
 * bootstrap file or URL larger than that is refused with an error, which the SDK reports as a warning
 * ("unable to load bootstrap") and the proxy waits for the upstream. Definitions given in code
 * (`data`) and a `bootstrapProvider` of the user's own are used as they are.
 */
export function limitedBootstrapProvider(
  options: BootstrapOptions,
  appName: string,
  instanceId: string,
  maxBytes: number,
): BootstrapProvider {
  if (options.bootstrapProvider || options.data || (!options.url && !options.filePath)) {
    return resolveBootstrapProvider(options, appName, instanceId);
  }
  const { url, filePath } = options;
  return {
    readBootstrap: async () => {
      if (url) {
        const headers = buildHeaders({
          appName,
          instanceId,
          etag: undefined,
          contentType: undefined,
          custom: options.urlHeaders,
        });
        return fetchUrl(url, headers, maxBytes);
      }
      return filePath ? readFile(filePath, maxBytes) : undefined;
    },
  };
}
