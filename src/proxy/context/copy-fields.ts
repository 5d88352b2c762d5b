/**
 * Copies `source`'s own enumerable properties onto `target`, as an object spread `{ ...target,
 * ...source }` would make them: string keys in their order (a key `target` has keeps its place and
 * takes the new value), `__proto__` as an own data property (never the prototype), then the
 * enumerable symbols. Returns `target`.
 *
 * Why not the spread itself: on Node 20, `{ ...staticContext, ...context }` costs ~2.4 µs and
 * `{ ...context, environment, remoteAddress }` ~1 µs (V8 leaves its fast clone path when the
 * second object repeats a key or properties follow the spread), against ~0.15 µs for this loop;
 * every evaluation request makes two such copies. `test/proxy/context/copy-fields.test.ts` compares the
 * two on random objects.
 */
export function copyFields<T extends object>(
  target: T,
  source: object,
  /** A string key left out, as `const { [skip]: _, ...rest } = source` leaves it. */
  skip?: string,
): T {
  const into = target as Record<PropertyKey, unknown>;
  const from = source as Record<PropertyKey, unknown>;
  const keys = Object.keys(from);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (key === skip) continue;
    if (key === '__proto__')
      Object.defineProperty(into, key, {
        value: from[key],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else into[key] = from[key];
  }
  const symbols = Object.getOwnPropertySymbols(from);
  for (let i = 0; i < symbols.length; i++) {
    const symbol = symbols[i];
    if (Object.prototype.propertyIsEnumerable.call(from, symbol)) into[symbol] = from[symbol];
  }
  return target;
}
