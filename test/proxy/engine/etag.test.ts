import { canonicalContext } from '../../../src/proxy/context/canonical-context';
import { derivedEtag, derivedEtagOf } from '../../../src/proxy/engine/etag';

const DEFINITIONS = 'definitions-digest';

describe('derived ETags', () => {
  test('contexts that differ only in a lone surrogate, U+FFFD or its absence never share one', () => {
    const ids = [
      'bob\uD83D',
      'bob\uD83C',
      'bob\uFFFD',
      'bob\uDE00',
      'bob',
      'bob\uD83D\uDE00',
      'bob\uDE00\uD83D',
    ];
    const etags = ids.map((userId) =>
      derivedEtag(DEFINITIONS, 'enabled', canonicalContext({ userId }) ?? ''),
    );
    expect(new Set(etags).size).toBe(ids.length);
  });

  test('a well-formed string and an ill-formed one whose code units spell its UTF-8 bytes differ', () => {
    // 'ab' in UTF-8 is 0x61 0x62; the code unit 0x6261 in UTF-16LE is the same two bytes
    const wellFormed = 'ab';
    const illFormed = `${String.fromCharCode(0x6261)}\uD800`;
    expect(derivedEtag(DEFINITIONS, 'enabled', wellFormed)).not.toBe(
      derivedEtag(DEFINITIONS, 'enabled', illFormed),
    );
  });

  test('equal inputs give equal validators, in every format; each input and the scope count', () => {
    const canonical = canonicalContext({ userId: 'u1', properties: { plan: 'pro' } }) ?? '';
    const etag = derivedEtag(DEFINITIONS, 'enabled', canonical);
    expect(derivedEtag(DEFINITIONS, 'enabled', canonical)).toBe(etag);
    expect(etag).toMatch(/^W\/"d-[A-Za-z0-9_-]{32}"$/);
    expect(derivedEtag('other', 'enabled', canonical)).not.toBe(etag);
    expect(derivedEtag(DEFINITIONS, 'all', canonical)).not.toBe(etag);
    expect(derivedEtag(DEFINITIONS, 'enabled', canonical, 'scope')).not.toBe(etag);
    expect(derivedEtagOf('ofrep', etag)).toBe(derivedEtagOf('ofrep', etag));
    expect(derivedEtagOf('ofrep', etag)).not.toBe(etag);
  });
});
