/**
 * What clients usually send (a context of strings) is accepted without running the schemas
 * (`isPlainContext`): whatever that fast path accepts, `contextSchema` and OFREP's schema accept
 * with the same result, and `contextFromBody` / `ofrepInput` answer random bodies (objects, arrays,
 * numbers, booleans, nested values, nulls) exactly as the schema-only code did: the same context,
 * or a 400 with the same message.
 */
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { ValidationError } from '../../../src/common/errors/http-errors';
import { checkContextInput, contextFromBody, normalise } from '../../../src/proxy/context/build-context';
import type { ContextLimits } from '../../../src/proxy/context/limits';
import { contextSchema, isPlainContext } from '../../../src/proxy/context/schemas';
import { ofrepInput } from '../../../src/proxy/ofrep/request-input';
import { ofrepContextSchema, ofrepRequestSchema } from '../../../src/proxy/ofrep/schemas';

const LIMITS: ContextLimits = { maxProperties: 20, maxValueLength: 64, maxTotalLength: 2000 };

const names = fc.constantFrom(
  'userId',
  'sessionId',
  'appName',
  'environment',
  'currentTime',
  'remoteAddress',
  'properties',
  'targetingKey',
  'plan',
  'region',
);
const leaf = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constant(null),
  fc.integer(),
  fc.boolean(),
  fc.constant(''),
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: leaf },
  { weight: 2, arbitrary: fc.dictionary(names, leaf, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.array(leaf, { maxLength: 2 }) },
);
/** Mostly plain contexts, often with a wrong value somewhere. */
const contextArb = fc.oneof(
  { weight: 8, arbitrary: fc.dictionary(names, value, { maxKeys: 6 }) },
  { weight: 1, arbitrary: leaf },
  { weight: 1, arbitrary: fc.array(leaf, { maxLength: 2 }) },
);

/** What `contextFromBody` answered before the fast path: the limits, then the schema every time. */
function viaSchema(raw: unknown): Context | string {
  if (raw === undefined || raw === null) return {};
  return outcome(() => {
    checkContextInput(raw, LIMITS);
    const parsed = contextSchema.safeParse(raw);
    if (!parsed.success) throw new ValidationError('refused');
    return normalise(parsed.data);
  });
}

/** What `ofrepInput` answered before the fast path. */
function ofrepViaSchema(body: unknown): Context | string {
  return outcome(() => {
    checkContextInput((body as { context?: unknown } | undefined)?.context, LIMITS);
    const parsed = ofrepRequestSchema.safeParse(body ?? {});
    if (!parsed.success) throw new ValidationError('refused');
    const { targetingKey, ...rest } = parsed.data.context ?? {};
    return normalise(
      targetingKey === undefined || targetingKey === null ? rest : { ...rest, userId: targetingKey },
    );
  });
}

function outcome(run: () => Context): Context | string {
  try {
    return run();
  } catch (err) {
    if (err instanceof ValidationError) return 'refused';
    const status = (err as { status?: number }).status;
    if (status === 400) return 'refused';
    throw err;
  }
}

describe('the fast acceptance of plain contexts', () => {
  test('whatever isPlainContext accepts the schemas accept, with the same context', () => {
    fc.assert(
      fc.property(contextArb, (raw) => {
        if (!isPlainContext(raw)) return;
        const parsed = contextSchema.safeParse(raw);
        expect(parsed.success).toBe(true);
        if (parsed.success) expect(normalise(raw)).toEqual(normalise(parsed.data));
        expect(ofrepContextSchema.safeParse(raw).success).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  test('contextFromBody answers as the schema alone did', () => {
    fc.assert(
      fc.property(contextArb, (raw) => {
        expect(outcome(() => contextFromBody(raw, LIMITS))).toEqual(viaSchema(raw));
      }),
      { numRuns: 5000 },
    );
  });

  test('ofrepInput answers as the schema alone did, targetingKey as the user', () => {
    fc.assert(
      fc.property(fc.oneof(fc.record({ context: contextArb }, { requiredKeys: [] }), leaf), (body) => {
        expect(outcome(() => ofrepInput(body, LIMITS).clientContext)).toEqual(ofrepViaSchema(body));
      }),
      { numRuns: 5000 },
    );
  });

  test('a plain context is recognised, and a number, a nested object or a list is not', () => {
    expect(isPlainContext({ userId: 'u', properties: { plan: 'pro', gone: null }, remoteAddress: 1 })).toBe(
      true,
    );
    expect(isPlainContext({ userId: 7 })).toBe(false);
    expect(isPlainContext({ plan: { nested: 'x' } })).toBe(false);
    expect(isPlainContext({ properties: 'pro' })).toBe(false);
    expect(isPlainContext({ properties: { plan: 1 } })).toBe(false);
    expect(isPlainContext(['u'])).toBe(false);
  });
});
