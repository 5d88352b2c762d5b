/**
 * The request scope the compiled toggles share: field values are read once per request and read
 * again for the next one; a field without a number (`fieldIndex` past its cap answers -1) is read
 * from the context every time; the root fields strategies read are the context's at `begin`.
 */
import { contextValue, fieldIndex, RequestScope } from '../../../src/proxy/engine/compiled/scope';
import { continueHash, hashAfter, hashPrefix } from '../../../src/proxy/upstream/murmur-hash';

const PREFIX = hashPrefix('checkout.flag-00003:', 0);
/** The prepared key's value, and that hashing it gives the hash of its value. */
const keyOf = (key: ReturnType<RequestScope['stickyKey']>): string | null => {
  if (key === null) return null;
  expect(hashAfter(PREFIX, key)).toBe(continueHash(PREFIX, key.key));
  return key.key;
};

describe('RequestScope', () => {
  test('a field is read once per request, as contextValue reads it, and again for the next request', () => {
    const scope = new RequestScope(0);
    const plan = fieldIndex('plan');
    const context = { properties: { plan: 'pro' } };
    scope.begin(context);
    expect(scope.value(plan, 'plan')).toBe('pro');
    // the same request keeps what it read
    context.properties.plan = 'free';
    expect(scope.value(plan, 'plan')).toBe('pro');
    scope.begin({ properties: { plan: 'free' } });
    expect(scope.value(plan, 'plan')).toBe('free');
    scope.begin({ userId: 'u1' });
    expect(scope.value(plan, 'plan')).toBeUndefined();
  });

  test('a field without a number is read from the context every time', () => {
    const scope = new RequestScope(0);
    const context: { properties: Record<string, string> } = { properties: { tier: 'a' } };
    scope.begin(context);
    expect(scope.value(-1, 'tier')).toBe('a');
    context.properties.tier = 'b';
    expect(scope.value(-1, 'tier')).toBe('b');
    expect(scope.value(-1, 'tier')).toBe(contextValue(context, 'tier'));
  });

  test('numbers are stable per name and the root fields are the context of the request', () => {
    expect(fieldIndex('region')).toBe(fieldIndex('region'));
    expect(fieldIndex('region')).not.toBe(fieldIndex('plan'));
    const scope = new RequestScope(0);
    scope.begin({ userId: 'u1', sessionId: 's1', featureToggle: 't' } as never);
    expect([scope.userId, scope.sessionId, scope.featureToggle]).toEqual(['u1', 's1', 't']);
    scope.begin({});
    expect([scope.userId, scope.sessionId, scope.featureToggle]).toEqual([undefined, undefined, undefined]);
  });

  test('a check is computed once per request', () => {
    const scope = new RequestScope(1);
    let calls = 0;
    const check = () => {
      calls += 1;
      return true;
    };
    scope.begin({});
    expect(scope.shared(0, check) && scope.shared(0, check)).toBe(true);
    expect(calls).toBe(1);
    scope.begin({});
    scope.shared(0, check);
    expect(calls).toBe(2);
  });

  test("a rollout's default sticky value is userId, else sessionId, as the SDK's template string; null without", () => {
    const scope = new RequestScope(0);
    const cases: [Record<string, unknown>, string | null][] = [
      [{ userId: 'u1', sessionId: 's1' }, 'u1'],
      [{ userId: '', sessionId: 's1' }, 's1'],
      [{ userId: 42 }, '42'],
      [{ sessionId: 's2', remoteAddress: '10.0.0.1' }, 's2'],
      [{ remoteAddress: '10.0.0.1' }, null],
      [{ userId: '', sessionId: '' }, null],
    ];
    for (const [context, expected] of cases) {
      scope.begin(context as never);
      expect(keyOf(scope.stickyKey())).toBe(expected);
      // prepared once per request
      expect(scope.stickyKey()).toBe(scope.stickyKey());
    }
  });

  test("a variant choice's default seed is the first non-empty string of userId, sessionId, remoteAddress", () => {
    const scope = new RequestScope(0);
    const cases: [Record<string, unknown>, string | null][] = [
      [{ userId: 'u1', sessionId: 's1', remoteAddress: '10.0.0.1' }, 'u1'],
      [{ userId: 42, sessionId: 's1' }, 's1'],
      [{ userId: '', sessionId: '', remoteAddress: '10.0.0.1' }, '10.0.0.1'],
      [{ userId: '' }, null],
      [{}, null],
    ];
    for (const [context, expected] of cases) {
      scope.begin(context as never);
      expect(keyOf(scope.seedKey())).toBe(expected);
    }
  });

  test('a field prepared for hashing is its value as contextValue reads it, null when missing or empty', () => {
    const scope = new RequestScope(0);
    const tenant = fieldIndex('tenant');
    scope.begin({ properties: { tenant: 'acme' } });
    expect(keyOf(scope.fieldKey(tenant, 'tenant'))).toBe('acme');
    expect(scope.fieldKey(tenant, 'tenant')).toBe(scope.fieldKey(tenant, 'tenant'));
    scope.begin({ properties: { tenant: '' } });
    expect(scope.fieldKey(tenant, 'tenant')).toBeNull();
    scope.begin({ tenant: 7 } as never);
    expect(keyOf(scope.fieldKey(tenant, 'tenant'))).toBe('7');
    scope.begin({});
    expect(scope.fieldKey(tenant, 'tenant')).toBeNull();
    // without a number, read every time
    const context: { properties: Record<string, string> } = { properties: { tier: 'a' } };
    scope.begin(context);
    expect(keyOf(scope.fieldKey(-1, 'tier'))).toBe('a');
    context.properties.tier = 'b';
    expect(keyOf(scope.fieldKey(-1, 'tier'))).toBe('b');
  });

  test('keys prepared request after request hash their own values at every alignment', () => {
    const scope = new RequestScope(0);
    const values = [
      'u',
      'a-much-longer-user-id-than-the-room-a-key-starts-with-0123456789',
      'user-7',
      // longer than a reused key holds: prepared apart
      'z'.repeat(1_000),
      'x'.repeat(5),
    ];
    for (const userId of values) {
      scope.begin({ userId, sessionId: `s-${userId}` });
      expect(keyOf(scope.stickyKey())).toBe(userId);
      expect(keyOf(scope.key(`s-${userId}`))).toBe(`s-${userId}`);
      // every alignment of a prefix's partial block
      for (const prefix of ['a', 'ab', 'abc', 'abcd', 'abcde']) {
        const state = hashPrefix(prefix, 0);
        expect(hashAfter(state, scope.key(userId))).toBe(continueHash(state, userId));
      }
    }
  });
});
