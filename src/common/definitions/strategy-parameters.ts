/** What a built-in strategy's code needs of the parameter it reads. */
export type ParameterKind =
  /** A number from 0 to 100, read with `Number(...)`. */
  | 'percentage'
  /** A comma-separated list, read with string methods (which throw on anything but a string). */
  | 'string';

export interface StrategyParameter {
  readonly name: string;
  readonly kind: ParameterKind;
}

/**
 * The built-in strategies of `unleash-client` 6 that read their `parameters` object, each with the
 * parameter its code reads. A `Map`, so a strategy named like an `Object.prototype` member is no
 * built-in strategy here either.
 */
export const STRATEGY_PARAMETERS: ReadonlyMap<string, StrategyParameter> = new Map([
  ['flexibleRollout', { name: 'rollout', kind: 'percentage' }],
  ['gradualRolloutUserId', { name: 'percentage', kind: 'percentage' }],
  ['gradualRolloutSessionId', { name: 'percentage', kind: 'percentage' }],
  ['gradualRolloutRandom', { name: 'percentage', kind: 'percentage' }],
  ['userWithId', { name: 'userIds', kind: 'string' }],
  ['remoteAddress', { name: 'IPs', kind: 'string' }],
  ['applicationHostname', { name: 'hostNames', kind: 'string' }],
]);
