import { isDateOperator, isListOperator, isNumberOperator, isSemverOperator, SEMVER } from './operators';

/**
 * What is wrong with a constraint's operand for its operator, as both schemas of definitions
 * check it (each words it its own way):
 * - `list`: a list operator without a `values` list;
 * - `single`: a number, date, semantic-version or REGEX operator without a string `value`;
 * - `number`, `date`, `semver`: a `value` that does not read as one, as the SDK reads it
 *   (`Number(value)`, `new Date(value)`, `semver`).
 * Unknown operators are not checked (the SDK evaluates their constraint as false), nor is a
 * REGEX's pattern.
 */
export type OperandProblem = 'list' | 'single' | 'number' | 'date' | 'semver';

export interface ConstraintOperands {
  readonly operator: string;
  readonly values?: readonly string[] | null;
  readonly value?: string | null;
}

export function operandProblem(c: ConstraintOperands): OperandProblem | undefined {
  const op = c.operator;
  if (isListOperator(op)) return Array.isArray(c.values) ? undefined : 'list';
  const number = isNumberOperator(op);
  const date = isDateOperator(op);
  const semver = isSemverOperator(op);
  if (!number && !date && !semver && op !== 'REGEX') return undefined;
  const value = c.value;
  if (typeof value !== 'string') return 'single';
  if (number && !Number.isFinite(Number(value))) return 'number';
  if (date && Number.isNaN(Date.parse(value))) return 'date';
  if (semver && !SEMVER.test(value)) return 'semver';
  return undefined;
}
