import { ConfigError } from '../../../src/common/config/resolve';
import { secretValues } from '../../../src/common/logging/redact';
import { REDACTED, SecretRedactor } from '../../../src/common/logging/secret-redactor';
import { PROXY_OPTIONS } from '../../../src/proxy/config/options';
import { parseConfig } from '../../../src/proxy/config/parse-config';

describe('the redaction of log lines', () => {
  it('removes the userinfo of any URL, whoever configured it, at any length', () => {
    const redactor = new SecretRedactor([]);
    expect(redactor.text('request to http://u:a@127.0.0.1:1/x failed; retry redis://:b@r:6379')).toBe(
      `request to http://u:${REDACTED}@127.0.0.1:1/x failed; retry redis://:${REDACTED}@r:6379`,
    );
    expect(redactor.text('via http://tok@proxy:3128/')).toBe(`via http://${REDACTED}@proxy:3128/`);
  });

  it('removes Authorization values, Bearer credentials and credential query parameters', () => {
    const redactor = new SecretRedactor([]);
    expect(redactor.text('headers {"Authorization":"x1"} and authorization: Bearer y2')).toBe(
      `headers {"Authorization":"${REDACTED}"} and authorization: Bearer ${REDACTED}`,
    );
    expect(redactor.text('GET /a?token=z3&b=1')).toBe(`GET /a?token=${REDACTED}&b=1`);
  });

  it('replaces a configured secret of 4 characters or more wherever it occurs, also percent-encoded', () => {
    const redactor = new SecretRedactor(['k3y!', 'a b/c']);
    expect(redactor.text('failed for k3y!, a%20b%2Fc')).toBe(`failed for ${REDACTED}, ${REDACTED}`);
  });

  it('replaces a 1-character secret only where it stands whole, so other lines stay readable', () => {
    const redactor = new SecretRedactor(['a']);
    expect(redactor.text('a proxy is ready')).toBe('a proxy is ready');
    expect(redactor.text('key "a" refused')).toBe(`key "${REDACTED}" refused`);
    expect(redactor.text('a')).toBe(REDACTED);
    expect(redactor.value({ key: 'a', other: 'banana' })).toEqual({ key: REDACTED, other: 'banana' });
  });

  it('a configuration problem never shows the userinfo of a URL that does not parse', () => {
    expect.assertions(2);
    try {
      parseConfig(
        {},
        { FLAGS_URL: 'ftp://u:p1@host/api', FLAGS_API_TOKEN: 't', FLAGS_PROXY_CLIENT_KEYS: 'k' },
      );
    } catch (err) {
      const text = (err as ConfigError).problems.join('\n');
      expect(text).toContain(`FLAGS_URL="ftp://u:${REDACTED}@host/api"`);
      expect(text).not.toContain('p1');
    }
  });

  it('knows the secret of a `secret@environment` client key by itself too', () => {
    const values = new Map<string, unknown>([['clientKeys', ['pretrusted-key-1@production']]]);
    expect(secretValues(PROXY_OPTIONS, values)).toEqual(['pretrusted-key-1@production', 'pretrusted-key-1']);
  });
});
