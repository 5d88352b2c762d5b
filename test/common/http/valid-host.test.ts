import fc from 'fast-check';
import { validHost } from '../../../src/common/http/host';
import { mergeVary } from '../../../src/common/http/vary';
import { keyVaryOf } from '../../../src/proxy/auth/key-vary';

describe('validHost', () => {
  test.each([
    'flags.example.com',
    'flags.example.com:8443',
    'LOCALHOST',
    '127.0.0.1:3063',
    '[::1]',
    '[2001:db8::1]:443',
    'svc_1.internal.',
    'flags-08.example',
    '08.example',
    '0x7g',
    '127.0.0.1.',
  ])('accepts %s', (host) => expect(validHost(host)).toBe(host));

  test.each([
    undefined,
    '',
    'evil.example/path',
    'user@evil.example',
    'evil.example:',
    'evil.example:65536',
    'evil.example:1:2',
    'evil.example?x',
    'evil.example#x',
    'evil example',
    'evil.example\t',
    '[::1',
    '[::1]x',
    '[not-ip]:80',
    '.evil.example',
    'evil..example',
    '-evil.example',
    `${'a'.repeat(64)}.example`,
    // a URL parser reads a name ending in a number as an IPv4 address, and refuses these
    '08',
    '1.2.3.09',
    'flags.08',
    '08.',
    // read as other addresses than they spell, or not as a dotted quad: refused too
    '1.2.3',
    '0x7f.1',
  ])('refuses %p', (host) => expect(validHost(host)).toBeUndefined());

  test('whatever it accepts, a URL built on it has that host and the path it was given', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.domain(),
          fc.webAuthority({ withPort: true, withUserInfo: true }),
          // names a URL parser may read as IPv4 numbers (decimal, octal, hex parts)
          fc.stringMatching(/^[0-9a-fx.]{1,14}$/),
          fc.ipV4Extended(),
        ),
        (host) => {
          const valid = validHost(host);
          if (valid === undefined) return;
          const url = new URL(`http://${valid}/ofrep/v1/flag-changes?token=t`);
          expect(url.username).toBe('');
          expect(url.password).toBe('');
          expect(url.pathname).toBe('/ofrep/v1/flag-changes');
          expect(url.search).toBe('?token=t');
        },
      ),
      { numRuns: 20_000 },
    );
  });
});

describe('Vary values', () => {
  test('a field is named once, whatever its case; * stays *', () => {
    expect(mergeVary('Origin', 'Accept-Encoding, Authorization')).toBe(
      'Origin, Accept-Encoding, Authorization',
    );
    expect(mergeVary('accept-encoding', 'Accept-Encoding, Authorization')).toBe(
      'accept-encoding, Authorization',
    );
    expect(mergeVary('', 'Accept-Encoding')).toBe('Accept-Encoding');
    expect(mergeVary('*', 'Authorization')).toBe('*');
    expect(mergeVary('Origin', '*')).toBe('*');
  });

  test('the key header is written in canonical case, and named once when it is one OFREP reads anyway', () => {
    expect(keyVaryOf('x-client-key')).toEqual({
      evaluation: 'Accept-Encoding, X-Client-Key',
      ofrep: 'Accept-Encoding, X-Client-Key, Authorization, X-API-Key',
      clientApi: 'Accept-Encoding, Authorization',
    });
    expect(keyVaryOf('x-api-key').ofrep).toBe('Accept-Encoding, X-Api-Key, Authorization');
    expect(keyVaryOf('authorization').ofrep).toBe('Accept-Encoding, Authorization, X-API-Key');
  });
});
