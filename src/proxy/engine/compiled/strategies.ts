import type { Context } from 'unleash-client';
import type { SdkVariant } from '../../upstream/feature-repository';
import { normalizedValue, prefixedNormalizedValue } from '../../upstream/murmur-hash';
import { sdkHostname, sdkIpAddress, type IpAddress } from '../../upstream/sdk/libraries';
import type { Segment, StrategyTransportInterface } from '../../upstream/sdk/types';
import { ENABLED_ANSWER } from '../../upstream/sdk/variant';
import { NotCompiled, type Check } from './constraints';
import type { Checks } from './checks';
import type { RequestScope } from './scope';
import { contextValue } from './scope';
import { compileVariantChoice, type VariantChoice } from './variants';

/** The seed of the SDK's rollout hash (`strategy/util.js`). */
const STRATEGY_SEED = 0;

/**
 * One strategy of a toggle compiled: `undefined` when it does not enable the toggle for the
 * context, else the SDK's answer for the toggle (its strategy variant, or `ENABLED_ANSWER` when it
 * has none) before feature variants are considered.
 */
export interface CompiledStrategy {
  readonly definition: StrategyTransportInterface;
  result(scope: RequestScope): SdkVariant | undefined;
}

/** The built-in strategies of `unleash-client` 6, by name. */
export const BUILT_IN = new Set([
  'default',
  'applicationHostname',
  'gradualRolloutRandom',
  'gradualRolloutUserId',
  'gradualRolloutSessionId',
  'userWithId',
  'remoteAddress',
  'flexibleRollout',
]);

/**
 * Built-in strategies whose answer depends on the context and one parameter only (no chance, no
 * toggle name): by name, that parameter.
 */
const PURE = new Map([
  ['userWithId', 'userIds'],
  ['remoteAddress', 'IPs'],
]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A parameter read as a number or truthiness: a primitive from the client API, else not compiled. */
function primitive(
  parameters: Record<string, unknown>,
  key: string,
): string | number | boolean | undefined | null {
  const value = parameters[key];
  if (value === undefined || value === null) return value;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  throw new NotCompiled(`parameter ${key}`);
}

/** A parameter the SDK calls a string method on when it is truthy. */
function stringParameter(parameters: Record<string, unknown>, key: string): string | undefined {
  const value = parameters[key];
  if (!value) return undefined;
  if (typeof value !== 'string') throw new NotCompiled(`parameter ${key} not a string`);
  return value;
}

/** `${Math.round(Math.random() * 10000) + 1}`: the flexible rollout's die. */
const rolloutDie = () => `${Math.round(Math.random() * 10000) + 1}`;

/** `percentage > 0 && normalizedStrategyValue(id, groupId) <= percentage` with the prefix made once. */
function rolloutOf(groupId: string, percentage: number): (id: string) => boolean {
  if (!(percentage > 0)) return () => false;
  const hash = prefixedNormalizedValue(`${groupId}:`, STRATEGY_SEED);
  return (id) => hash(id, 100) <= percentage;
}

function flexibleRollout(parameters: Record<string, unknown>): (context: Context) => boolean {
  const percentage = Number(primitive(parameters, 'rollout'));
  const stickiness = primitive(parameters, 'stickiness') || 'default';
  if (typeof stickiness !== 'string') throw new NotCompiled('stickiness not a string');
  const id: (context: Context) => unknown =
    stickiness === 'default'
      ? (context) => context.userId || context.sessionId || rolloutDie()
      : stickiness === 'random'
        ? () => rolloutDie()
        : (context) => contextValue(context, stickiness);
  const group = primitive(parameters, 'groupId');
  if (group) {
    const rollout = rolloutOf(`${group}`, percentage);
    return (context) => {
      const sticky = id(context);
      return sticky ? rollout(`${sticky as string}`) : false;
    };
  }
  if (!(percentage > 0)) return () => false;
  return (context) => {
    const sticky = id(context);
    if (!sticky) return false;
    const groupId: unknown = context.featureToggle || '';
    return normalizedValue(`${sticky as string}`, `${groupId as string}`, 100, STRATEGY_SEED) <= percentage;
  };
}

function gradualRollout(
  parameters: Record<string, unknown>,
  field: 'userId' | 'sessionId',
): (context: Context) => boolean {
  const percentage = Number(primitive(parameters, 'percentage'));
  const rollout = rolloutOf(`${primitive(parameters, 'groupId') || ''}`, percentage);
  return (context) => {
    const id = context[field];
    return id ? rollout(`${id}`) : false;
  };
}

function gradualRolloutRandom(parameters: Record<string, unknown>): (context: Context) => boolean {
  const percentage = Number(primitive(parameters, 'percentage'));
  return () => percentage >= Math.floor(Math.random() * 100) + 1;
}

function userWithId(parameters: Record<string, unknown>): (context: Context) => boolean {
  const userIds = stringParameter(parameters, 'userIds');
  const set = new Set<unknown>(userIds ? userIds.split(/\s*,\s*/) : []);
  return (context) => context.userId !== undefined && set.has(context.userId);
}

function remoteAddress(parameters: Record<string, unknown>): (context: Context) => boolean {
  const ips = stringParameter(parameters, 'IPs');
  if (!ips) return () => false;
  const { Address4 } = sdkIpAddress();
  const ranges = ips.split(/\s*,\s*/).map((range) => {
    let subnet: IpAddress | undefined;
    try {
      subnet = new Address4(range);
    } catch {
      subnet = undefined;
    }
    return { range, subnet };
  });
  return (context) => {
    const address = context.remoteAddress;
    let remote: IpAddress | null | undefined; // undefined: not parsed yet, null: not an IPv4 address
    for (const { range, subnet } of ranges) {
      if (range === address) return true;
      if (!subnet) continue;
      if (remote === undefined) {
        try {
          remote = new Address4(address || '');
        } catch {
          remote = null;
        }
      }
      if (remote === null) continue;
      try {
        if (remote.isInSubnet(subnet)) return true;
      } catch {
        // the SDK answers false for this range
      }
    }
    return false;
  };
}

function applicationHostname(parameters: Record<string, unknown>): (context: Context) => boolean {
  const hostNames = stringParameter(parameters, 'hostNames');
  if (!hostNames) return () => false;
  const hostname = sdkHostname();
  if (hostname === undefined) throw new NotCompiled('the host name of the SDK is unknown');
  const enabled = hostNames
    .toLowerCase()
    .split(/\s*,\s*/)
    .includes(hostname);
  return () => enabled;
}

function isEnabledOf(name: string, parameters: Record<string, unknown>): (context: Context) => boolean {
  switch (name) {
    case 'default':
      return () => true;
    case 'flexibleRollout':
      return flexibleRollout(parameters);
    case 'gradualRolloutUserId':
      return gradualRollout(parameters, 'userId');
    case 'gradualRolloutSessionId':
      return gradualRollout(parameters, 'sessionId');
    case 'gradualRolloutRandom':
      return gradualRolloutRandom(parameters);
    case 'userWithId':
      return userWithId(parameters);
    case 'remoteAddress':
      return remoteAddress(parameters);
    case 'applicationHostname':
      return applicationHostname(parameters);
    default:
      throw new NotCompiled(`strategy ${name}`);
  }
}

/** The checks of a strategy's constraints and then of its segments' constraints, as the SDK yields them. */
function constraintChecks(
  strategy: StrategyTransportInterface,
  checks: Checks,
  segment: (id: number) => Segment | undefined,
): { id: number; check: Check }[] {
  const list: { id: number; check: Check }[] = [];
  const own: unknown = strategy.constraints;
  if (own !== undefined && own !== null) {
    if (!Array.isArray(own)) throw new NotCompiled('constraints not a list');
    for (const c of own) list.push(checks.of(c));
  }
  const segments: unknown = strategy.segments;
  if (segments !== undefined && segments !== null) {
    if (!Array.isArray(segments)) throw new NotCompiled('segments not a list');
    for (const id of segments as unknown[]) {
      const found = segment(id as number);
      if (!found) {
        list.push(checks.never());
        continue;
      }
      const constraints: unknown = found.constraints ?? [];
      if (!Array.isArray(constraints)) throw new NotCompiled('segment constraints not a list');
      for (const c of constraints) list.push(checks.of(c));
    }
  }
  return list;
}

/**
 * One strategy as `unleash-client` 6's `Strategy.getResult` evaluates it: its constraints (its own,
 * then its segments'; a missing segment fails), then the strategy itself, then its variants.
 */
export function compileStrategy(
  strategy: StrategyTransportInterface,
  checks: Checks,
  segment: (id: number) => Segment | undefined,
): CompiledStrategy {
  if (!isRecord(strategy) || typeof strategy.name !== 'string') throw new NotCompiled('strategy shape');
  const raw: unknown = strategy.parameters;
  const variants: unknown = strategy.variants;
  const hasVariants = Array.isArray(variants) && variants.length > 0;
  if (!isRecord(raw) && (strategy.name !== 'default' || hasVariants || (raw !== undefined && raw !== null)))
    throw new NotCompiled('parameters not an object');
  const parameters = isRecord(raw) ? raw : {};
  const isEnabled = isEnabledOf(strategy.name, parameters);
  // strategies answering from the context alone, the same for equal parameters: checked once per request
  const pure = PURE.get(strategy.name);
  const shared =
    pure === undefined
      ? undefined
      : checks.shared(JSON.stringify(['strategy', strategy.name, parameters[pure]]), () => isEnabled);
  const constraints = constraintChecks(strategy, checks, segment);
  let choice: VariantChoice | undefined;
  if (hasVariants) {
    const first: unknown = (variants as unknown[])[0];
    if (!isRecord(first)) throw new NotCompiled('a variant not an object');
    choice = compileVariantChoice(parameters.groupId, first.stickiness || parameters.stickiness, variants);
  }
  return {
    definition: strategy,
    result(scope) {
      for (const { id, check } of constraints) if (!scope.shared(id, check)) return undefined;
      if (shared !== undefined ? !scope.shared(shared.id, shared.check) : !isEnabled(scope.context))
        return undefined;
      if (choice === undefined) return ENABLED_ANSWER;
      return choice(scope.context) ?? ENABLED_ANSWER;
    },
  };
}
