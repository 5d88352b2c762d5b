import { ValidationError } from '../../common/errors/http-errors';

/** What one request's context may hold (docs/api.md, "Context"); the options are in `config/options.ts`. */
export interface ContextLimits {
  /** Most properties (`properties[x]`, and unknown root fields, which become properties). */
  readonly maxProperties: number;
  /** Longest value of a root field or property, in UTF-16 code units. */
  readonly maxValueLength: number;
  /** Most code units of every name and value together. */
  readonly maxTotalLength: number;
}

/**
 * Names no context field may have: given to a plain object they would change its prototype instead
 * of setting a field, so the client's value would vanish (or, merged elsewhere, travel further).
 */
const FORBIDDEN_NAMES = new Set(['__proto__', 'constructor', 'prototype']);

/** Throws the 400 for a field name that is not data (`__proto__`, `constructor`, `prototype`). */
export function requireDataName(name: string, field: string): void {
  if (FORBIDDEN_NAMES.has(name))
    throw new ValidationError(`${field} is not accepted: "${name}" cannot be the name of a context field`);
}

/**
 * Counts what one request's context takes against its limits, so nothing bigger is ever parsed
 * further (a schema, the canonical context, the evaluation all grow with it).
 */
export class ContextBudget {
  private properties = 0;
  private total = 0;

  constructor(private readonly limits: ContextLimits) {}

  /** A root field or property `name = value`; `field` names it in the 400. */
  take(name: string, value: string, field: string, isProperty: boolean): void {
    this.count(name, value, field, undefined, isProperty);
  }

  /**
   * `take` for the query parameter `parameter`, named `Query parameter "…"` in the 400 (the name
   * is made only then: this runs for every parameter of every GET).
   */
  takeParameter(name: string, value: string, parameter: string, isProperty: boolean): void {
    this.count(name, value, undefined, parameter, isProperty);
  }

  private count(
    name: string,
    value: string,
    field: string | undefined,
    parameter: string | undefined,
    isProperty: boolean,
  ): void {
    if (FORBIDDEN_NAMES.has(name)) requireDataName(name, labelOf(field, parameter));
    const { limits } = this;
    if (isProperty && ++this.properties > limits.maxProperties)
      throw new ValidationError(
        `The context has more than ${limits.maxProperties} properties (limit maxContextProperties / FLAGS_MAX_CONTEXT_PROPERTIES)`,
      );
    if (value.length > limits.maxValueLength)
      throw new ValidationError(
        `${labelOf(field, parameter)} is longer than ${limits.maxValueLength} characters (limit maxContextValueLength / FLAGS_MAX_CONTEXT_VALUE_LENGTH)`,
      );
    this.total += name.length + value.length;
    if (this.total > limits.maxTotalLength)
      throw new ValidationError(
        `The context is larger than ${limits.maxTotalLength} characters of names and values (limit maxContextSize / FLAGS_MAX_CONTEXT_SIZE)`,
      );
  }
}

const labelOf = (field: string | undefined, parameter: string | undefined): string =>
  field ?? `Query parameter "${parameter}"`;
