import type { Context } from 'unleash-client';
import { isListOperator, isSingleValueOperator } from '../../../common/definitions/operators';
import {
  sdkIpAddress,
  sdkRe2,
  sdkSemver,
  type IpAddress,
  type IpAddressClass,
  type SemVer,
} from '../../upstream/sdk/libraries';
import type { Constraint } from '../../upstream/sdk/types';
import { contextValue } from './scope';

/** A compiled check of a context: true when it passes. */
export type Check = (context: Context) => boolean;

/** Why a definition is not compiled: the SDK evaluates its toggle. */
export class NotCompiled extends Error {}

const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((v) => typeof v === 'string');

const isFlag = (value: unknown) => value === undefined || value === null || typeof value === 'boolean';

/** `cleanValues` of the SDK's operators: empty values dropped, the others trimmed. */
const cleanValues = (values: readonly string[]) => values.filter((v) => !!v).map((v) => v.trim());

const NEVER: Check = () => false;

function inOperator(field: string, values: readonly string[], notIn: boolean): Check {
  const set = new Set(cleanValues(values));
  if (notIn) return (context) => !set.has(contextValue(context, field) as string);
  return (context) => set.has(contextValue(context, field) as string);
}

function stringOperator(
  field: string,
  operator: string,
  values: readonly string[],
  caseInsensitive: boolean,
): Check {
  const cleaned = cleanValues(values);
  const list = caseInsensitive ? cleaned.map((v) => v.toLocaleLowerCase()) : cleaned;
  const read = caseInsensitive
    ? (context: Context) => contextValue(context, field)?.toLocaleLowerCase()
    : (context: Context) => contextValue(context, field);
  const test =
    operator === 'STR_STARTS_WITH'
      ? (value: string) => list.some((v) => value.startsWith(v))
      : operator === 'STR_ENDS_WITH'
        ? (value: string) => list.some((v) => value.endsWith(v))
        : (value: string) => list.some((v) => value.includes(v));
  return (context) => {
    const value = read(context);
    return typeof value === 'string' && test(value);
  };
}

function numberOperator(field: string, operator: string, raw: string): Check {
  const value = Number(raw);
  if (Number.isNaN(value)) return NEVER;
  const read = (context: Context) => Number(contextValue(context, field));
  switch (operator) {
    case 'NUM_EQ':
      return (context) => read(context) === value;
    case 'NUM_GT':
      return (context) => read(context) > value;
    case 'NUM_GTE':
      return (context) => read(context) >= value;
    case 'NUM_LT':
      return (context) => read(context) < value;
    default:
      return (context) => read(context) <= value;
  }
}

/** DATE_*: the context's `currentTime` (root field only) or the clock, against the constraint's date. */
function dateOperator(operator: string, raw: string): Check {
  const value = new Date(raw).getTime();
  const now = (context: Context) =>
    context.currentTime ? new Date(context.currentTime).getTime() : Date.now();
  return operator === 'DATE_AFTER' ? (context) => now(context) > value : (context) => now(context) < value;
}

function semverOperator(field: string, operator: string, raw: string): Check {
  const semver = sdkSemver();
  let value: SemVer;
  try {
    value = new semver.SemVer(raw);
  } catch {
    // every comparison with it throws in the SDK, which answers false
    return NEVER;
  }
  const compare =
    operator === 'SEMVER_EQ'
      ? semver.eq
      : operator === 'SEMVER_GT'
        ? semver.gt
        : operator === 'SEMVER_GTE'
          ? semver.gte
          : operator === 'SEMVER_LT'
            ? semver.lt
            : semver.lte;
  return (context) => {
    const version = contextValue(context, field);
    if (!version) return false;
    try {
      if (!semver.valid(version) || version.startsWith('v')) return false;
      return compare(version, value);
    } catch {
      return false;
    }
  };
}

function regexOperator(field: string, pattern: string, caseInsensitive: boolean): Check {
  const { RE2JS } = sdkRe2();
  let regex: ReturnType<typeof RE2JS.compile>;
  try {
    regex = RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : undefined);
  } catch {
    return NEVER;
  }
  return (context) => {
    const value = contextValue(context, field);
    if (typeof value !== 'string') return false;
    try {
      return regex.matcher(value).find();
    } catch {
      return false;
    }
  };
}

interface Range {
  readonly subnet: IpAddress;
  readonly form: string;
}

function rangesOf(values: readonly string[], Address: IpAddressClass): Range[] {
  const ranges: Range[] = [];
  for (const range of values) {
    if (!Address.isValid(range)) continue;
    const subnet = new Address(range);
    ranges.push({ subnet, form: subnet.correctForm() });
  }
  return ranges;
}

function matches(address: IpAddress, ranges: readonly Range[]): boolean {
  const form = address.correctForm();
  return ranges.some((r) => form === r.form || address.isInSubnet(r.subnet));
}

function cidrOperator(field: string, values: readonly string[]): Check {
  const { Address4, Address6 } = sdkIpAddress();
  const cleaned = cleanValues(values);
  const v4 = rangesOf(cleaned, Address4);
  const v6 = rangesOf(cleaned, Address6);
  return (context) => {
    const value = contextValue(context, field);
    if (typeof value !== 'string') return false;
    if (Address4.isValid(value)) return matches(new Address4(value), v4);
    if (Address6.isValid(value)) return matches(new Address6(value), v6);
    return false;
  };
}

/**
 * One constraint as `unleash-client` 6's `Strategy.checkConstraint` evaluates it (operator, then
 * `inverted`). Throws `NotCompiled` for an operator it does not know or a shape other than the
 * client API's (the SDK evaluates such a toggle).
 */
export function compileConstraint(constraint: Constraint): Check {
  if (typeof constraint !== 'object' || constraint === null)
    throw new NotCompiled('a constraint not an object');
  const {
    contextName: field,
    operator,
    inverted,
    caseInsensitive,
  } = constraint as unknown as Partial<Record<string, unknown>>;
  if (typeof field !== 'string' || typeof operator !== 'string') throw new NotCompiled('constraint shape');
  if (!isFlag(inverted) || !isFlag(caseInsensitive)) throw new NotCompiled('constraint flags');
  const values: unknown = (constraint as { values?: unknown }).values;
  const value: unknown = (constraint as { value?: unknown }).value;
  let check: Check;
  if (isListOperator(operator)) {
    if (!isStringList(values)) throw new NotCompiled(`${operator} without a list of strings`);
    if (operator === 'IN' || operator === 'NOT_IN') check = inOperator(field, values, operator === 'NOT_IN');
    else if (operator === 'IN_CIDR') check = cidrOperator(field, values);
    else check = stringOperator(field, operator, values, caseInsensitive === true);
  } else if (isSingleValueOperator(operator)) {
    if (typeof value !== 'string') throw new NotCompiled(`${operator} without a string value`);
    if (operator.startsWith('NUM_')) check = numberOperator(field, operator, value);
    else if (operator.startsWith('DATE_')) check = dateOperator(operator, value);
    else if (operator.startsWith('SEMVER_')) check = semverOperator(field, operator, value);
    else check = regexOperator(field, value, caseInsensitive === true);
  } else throw new NotCompiled(`operator ${operator}`);
  if (inverted === true) {
    const plain = check;
    return (context) => !plain(context);
  }
  return check;
}

/** A key equal for constraints that are the same check (fields in a fixed order). */
export function constraintKey(constraint: Constraint): string {
  const c = constraint as unknown as Record<string, unknown>;
  return JSON.stringify([
    c.contextName,
    c.operator,
    c.values,
    c.value,
    c.inverted === true,
    c.caseInsensitive === true,
  ]);
}
