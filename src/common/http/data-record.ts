import { z } from 'zod';

/** An object without a prototype: every key, `__proto__` and `constructor` included, is its own data. */
export function nameMap<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}

/**
 * A JSON object whose keys are names (toggles, variants, strategy parameters), parsed without ever
 * treating a key as a property of `Object.prototype`: `z.record` builds a plain object, where a key
 * `__proto__` is dropped. Each entry's key and value are validated with their schemas (issues carry
 * the key in their path) and kept in a null-prototype object.
 */
export function dataRecord<V extends z.ZodType>(
  key: z.ZodType<string>,
  value: V,
  error = 'must be an object',
): z.ZodType<Record<string, z.output<V>>, unknown> {
  return z.unknown().transform((input, ctx) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      ctx.addIssue({ code: 'custom', message: error });
      return z.NEVER;
    }
    const out = nameMap<z.output<V>>();
    for (const [name, raw] of Object.entries(input)) {
      const k = key.safeParse(name);
      if (!k.success) {
        for (const issue of k.error.issues)
          ctx.addIssue({ code: 'custom', message: issue.message, path: [name] });
        continue;
      }
      const v = value.safeParse(raw);
      if (!v.success) {
        for (const issue of v.error.issues)
          ctx.addIssue({ code: 'custom', message: issue.message, path: [name, ...issue.path] });
        continue;
      }
      out[k.data] = v.data;
    }
    return out;
  });
}
