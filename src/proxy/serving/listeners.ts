import { createServer, type RequestListener, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext } from 'node:tls';
import { ConfigError } from '../../common/config/resolve';
import { readConfigFile } from '../../common/config/read-config-file';
import { describeBoundAddress } from '../../common/http/bound-address';
import type { TlsServing } from '../config/types';
import { httpsRedirect } from './https-redirect';

function listenOn(server: Server, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/** The port a listening server holds: the one the kernel chose when asked for 0. */
function boundPort(server: Server): number {
  return (server.address() as AddressInfo).port;
}

/**
 * The suites the HTTPS listener offers: forward secret only. TLS 1.3's suites all are; of TLS 1.2's,
 * the ECDHE ones with an AEAD cipher (no static-RSA key exchange, no CBC). Every browser and SDK of
 * the last decade has them; a client that offers none of them fails its handshake.
 */
export const SERVING_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The HTTPS listener's certificate and key, read and checked; undefined without TLS_ENABLE. */
export function servingCredentials(tls: TlsServing): { cert: Buffer; key: Buffer } | undefined {
  if (!tls.enable || tls.serverCert === undefined || tls.serverKey === undefined) return undefined;
  const credentials = {
    cert: readConfigFile(tls.serverCert, 'TLS_SERVER_CERT'),
    key: readConfigFile(tls.serverKey, 'TLS_SERVER_KEY'),
  };
  try {
    createSecureContext(credentials);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError([`TLS_SERVER_CERT / TLS_SERVER_KEY: not a usable certificate and key (${reason})`]);
  }
  return credentials;
}

export interface Listening {
  /** Every server listening (plain HTTP first); each is closed on shutdown. */
  servers: Server[];
  /**
   * For the start-up line: `port 3063 on every interface (::)` or `port 3063 (HTTP) and 3043 (HTTPS)
   * on every interface (::)`, the ports held (with PORT=0, the one the kernel chose) and the address.
   */
  description: string;
}

/**
 * Plain HTTP on `port`, and with TLS_ENABLE HTTPS on `tls.serverPort` beside it, both serving
 * `listener`; with REDIRECT_HTTP_TO_HTTPS the plain port only redirects to the HTTPS one. The
 * certificate and key are read once here: a file that cannot be read, or a pair Node refuses,
 * stops start-up naming TLS_SERVER_CERT / TLS_SERVER_KEY. In a cluster each worker listens the
 * same way and the primary shares both ports.
 */
export async function listenAll(
  listener: RequestListener,
  port: number,
  tls: TlsServing,
): Promise<Listening> {
  const credentials = servingCredentials(tls);
  if (credentials === undefined) {
    const server = await listenOn(createServer(listener), port);
    return {
      servers: [server],
      description: `port ${boundPort(server)} on ${describeBoundAddress(server.address())}`,
    };
  }
  const secure: Server = createHttpsServer(
    { ...credentials, ciphers: SERVING_CIPHERS, minVersion: 'TLSv1.2', honorCipherOrder: true },
    listener,
  );
  const plain = createServer(tls.redirectHttpToHttps ? httpsRedirect(tls.serverPort) : listener);
  const servers = [await listenOn(plain, port)];
  try {
    servers.push(await listenOn(secure, tls.serverPort));
  } catch (err) {
    servers[0].close();
    throw err;
  }
  const plainRole = tls.redirectHttpToHttps ? 'HTTP, redirecting to HTTPS' : 'HTTP';
  const [http, https] = servers.map(boundPort);
  const on = describeBoundAddress(servers[0].address());
  return { servers, description: `port ${http} (${plainRole}) and ${https} (HTTPS) on ${on}` };
}
