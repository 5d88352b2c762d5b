import { X509Certificate } from 'node:crypto';
import { createSecureContext, rootCertificates, type SecureContextOptions } from 'node:tls';
import { ConfigError } from '../../common/config/resolve';
import { readConfigFile } from '../../common/config/read-config-file';
import type { UpstreamTls } from '../config/types';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * The certificates of a PEM file of CA certificates, each checked: OpenSSL takes a CA list that
 * holds no certificate (or text around none) without a word, and every upstream call would then
 * fail its handshake. A file with no certificate, or one that does not parse, stops start-up
 * naming the variable.
 */
function caCertificates(file: Buffer, variable: string): string[] {
  const blocks = file.toString('utf8').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0)
    throw new ConfigError([
      `${variable}: the file holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)`,
    ]);
  blocks.forEach((block, index) => {
    try {
      new X509Certificate(block);
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new ConfigError([
        `${variable}: certificate ${index + 1} of ${blocks.length} in the file does not parse (${reason})`,
      ]);
    }
  });
  return blocks;
}

/** The TLS options of every connection to the upstream beyond `rejectUnauthorized`. */
export type UpstreamTlsOptions = Pick<SecureContextOptions, 'ca' | 'cert' | 'key' | 'pfx' | 'passphrase'>;

/**
 * Reads Unleash Edge's upstream TLS files once, at start: an extra CA (`UPSTREAM_CERTIFICATE_FILE`,
 * trusted beside Node's built-in roots, as Edge adds it to its roots) and a client identity (PKCS#12,
 * a PKCS#8 certificate + key pair, or one PEM file holding both). A file that cannot be read, or an
 * identity OpenSSL refuses (a wrong passphrase, a key that is not the certificate's), stops start-up
 * with a line naming the variable; the passphrase is never shown.
 */
export function upstreamTlsOptions(tls: UpstreamTls): UpstreamTlsOptions {
  const options: UpstreamTlsOptions = {};
  if (tls.caFile !== undefined) {
    options.ca = [
      ...rootCertificates,
      ...caCertificates(readConfigFile(tls.caFile, 'UPSTREAM_CERTIFICATE_FILE'), 'UPSTREAM_CERTIFICATE_FILE'),
    ];
  }
  const identity = tls.identity;
  let variable = '';
  if (identity?.kind === 'pkcs12') {
    variable = 'PKCS12_IDENTITY_FILE';
    options.pfx = readConfigFile(identity.file, variable);
    if (identity.passphrase !== undefined) options.passphrase = identity.passphrase;
  } else if (identity?.kind === 'pkcs8') {
    variable = 'PKCS8_CLIENT_CERTIFICATE_FILE / PKCS8_CLIENT_KEY_FILE';
    options.cert = readConfigFile(identity.certificateFile, 'PKCS8_CLIENT_CERTIFICATE_FILE');
    options.key = readConfigFile(identity.keyFile, 'PKCS8_CLIENT_KEY_FILE');
  } else if (identity?.kind === 'pem') {
    variable = 'PEM_CERT_FILE';
    const pem = readConfigFile(identity.file, variable);
    options.cert = pem;
    options.key = pem;
  }
  try {
    createSecureContext(options);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    const what = variable === '' ? 'UPSTREAM_CERTIFICATE_FILE' : variable;
    throw new ConfigError([
      `${what}: not a usable TLS ${variable === '' ? 'CA certificate' : 'client identity'} (${reason})`,
    ]);
  }
  return options;
}
