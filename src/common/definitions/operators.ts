/**
 * The constraint operators of the client API, as `unleash-client` 6 evaluates them, named once for
 * the proxy (its engine, its checks of what the upstream sends, its OpenAPI description) and the
 * flag server (the features file's schema).
 */

/** Operators that read a `values` list (the SDK trims each value before anything else). */
export const LIST_OPERATORS = [
  'IN',
  'NOT_IN',
  'STR_ENDS_WITH',
  'STR_STARTS_WITH',
  'STR_CONTAINS',
  'IN_CIDR',
] as const;
/** Operators that compare numbers, read from a single `value`. */
export const NUMBER_OPERATORS = ['NUM_EQ', 'NUM_GT', 'NUM_GTE', 'NUM_LT', 'NUM_LTE'] as const;
/** Operators that compare dates, read from a single `value`. */
export const DATE_OPERATORS = ['DATE_AFTER', 'DATE_BEFORE'] as const;
/** Operators that compare semantic versions, read from a single `value`. */
export const SEMVER_OPERATORS = ['SEMVER_EQ', 'SEMVER_GT', 'SEMVER_LT', 'SEMVER_GTE', 'SEMVER_LTE'] as const;

/** Every operator the client API defines. */
export const OPERATORS = [
  ...LIST_OPERATORS,
  ...NUMBER_OPERATORS,
  ...DATE_OPERATORS,
  ...SEMVER_OPERATORS,
  'REGEX',
] as const;

export type Operator = (typeof OPERATORS)[number];

/** Operators read from a single `value` (every one but the list operators). */
export const SINGLE_VALUE_OPERATORS: readonly string[] = OPERATORS.filter(
  (op) => !(LIST_OPERATORS as readonly string[]).includes(op),
);

/** Membership tests over the lists above, for strings read from definitions. */
export const isListOperator = setOf(LIST_OPERATORS);
export const isNumberOperator = setOf(NUMBER_OPERATORS);
export const isDateOperator = setOf(DATE_OPERATORS);
export const isSemverOperator = setOf(SEMVER_OPERATORS);
export const isSingleValueOperator = setOf(SINGLE_VALUE_OPERATORS);

/** A semantic version as the SDK's `semver` reads the values of `SEMVER_*` constraints. */
export const SEMVER = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

function setOf(names: readonly string[]): (operator: string) => boolean {
  const set = new Set(names);
  return (operator) => set.has(operator);
}
