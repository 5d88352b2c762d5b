/**
 * The request scope the compiled toggles share: field values are read once per request and read
 * again for the next one; a field without a number (`fieldIndex` past its cap answers -1) is read
 * from the context every time; the root fields strategies read are the context's at `begin`.
 */
import { contextValue, fieldIndex, RequestScope } from '../../../src/proxy/engine/compiled/scope';

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
});
