import type { Context } from 'unleash-client';
import type { SdkVariant } from '../../upstream/feature-repository';
import {
  continueHash,
  hashPrefix,
  normalizedAfter,
  normalizedValue,
  type HashPrefix,
} from '../../upstream/murmur-hash';
import { sdkHostname, sdkIpAddress, type IpAddress } from '../../upstream/sdk/libraries';
import type { Segment, StrategyTransportInterface } from '../../upstream/sdk/types';
import { ENABLED_ANSWER } from '../../upstream/sdk/variant';
import { NotCompiled, type Check } from './constraints';
import type { Checks } from './checks';
import type { RequestScope } from './scope';
import { defaultSticky, fieldIndex } from './scope';
import { chooseVariant, compileVariantChoice, type AnswerSlots, type VariantChoice } from './variants';

/** The seed of the SDK's rollout hash (`strategy/util.js`). */
const STRATEGY_SEED = 0;

/**
 * How a compiled strategy decides, read by `isEnabledFor` (one function for every strategy: a
 * switch on data, no closure per strategy to call through).
 */
export const ALWAYS = 0;
const NEVER = 1;
/** A check of the context shared per request (`RequestScope.shared`): userWithId, remoteAddress. */
export const SHARED = 2;
/** flexibleRollout: a sticky value, hashed after the strategy's `groupId:`. */
export const ROLLOUT_GROUP = 3;
/** flexibleRollout without a groupId: hashed after the context's `featureToggle:`. */
const ROLLOUT_TOGGLE = 4;
/** gradualRolloutUserId / gradualRolloutSessionId: the field's value, hashed after `groupId:`. */
const GRADUAL = 5;
/** gradualRolloutRandom: a die against the percentage. */
const RANDOM = 6;

/** Where a rollout's sticky value comes from. */
export const STICKY_DEFAULT = 0;
const STICKY_RANDOM = 1;
export const STICKY_FIELD = 2;

/**
 * One strategy of a toggle compiled: its definition, the ids and checks of its constraints (its
 * own, then its segments'), and how it decides (`kind` with what that kind reads). Evaluated by
 * `strategyResult`.
 */
export interface CompiledStrategy {
  readonly definition: StrategyTransportInterface;
  readonly checkIds: readonly number[];
  readonly checks: readonly Check[];
  readonly kind: number;
  /** SHARED: the check's id and function. */
  readonly sharedId: number;
  readonly sharedCheck: Check | undefined;
  /** The rollout's or the die's percentage. */
  readonly percentage: number;
  /** Rollouts: where the sticky value comes from, and its field (read as `contextValue` reads it, or, for GRADUAL, the root field) with its number (`fieldIndex`). */
  readonly sticky: number;
  readonly field: string;
  readonly fieldIndex: number;
  /** ROLLOUT_GROUP and GRADUAL: the hash state after `groupId:`; undefined when the percentage is not above 0. */
  readonly prefix: HashPrefix | undefined;
  /** Its strategy variants; undefined without. */
  readonly choice: VariantChoice | undefined;
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

/** What `isEnabledFor` reads, besides the kind; the parts a kind does not use keep these values. */
interface Decision {
  readonly kind: number;
  readonly percentage: number;
  readonly sticky: number;
  readonly field: string;
  readonly prefix: HashPrefix | undefined;
  /** SHARED: the check of the context alone, shared per request under its parameter. */
  readonly pure?: Check;
}

const NOTHING = { percentage: 0, sticky: STICKY_DEFAULT, field: '', prefix: undefined };

/** `percentage > 0 && normalizedStrategyValue(id, groupId) <= percentage`: the prefix's state, undefined when it never passes. */
const rolloutPrefix = (groupId: string, percentage: number): HashPrefix | undefined =>
  percentage > 0 ? hashPrefix(`${groupId}:`, STRATEGY_SEED) : undefined;

function flexibleRollout(parameters: Record<string, unknown>): Decision {
  const percentage = Number(primitive(parameters, 'rollout'));
  const stickiness = primitive(parameters, 'stickiness') || 'default';
  if (typeof stickiness !== 'string') throw new NotCompiled('stickiness not a string');
  const sticky =
    stickiness === 'default' ? STICKY_DEFAULT : stickiness === 'random' ? STICKY_RANDOM : STICKY_FIELD;
  const group = primitive(parameters, 'groupId');
  if (group)
    return {
      kind: ROLLOUT_GROUP,
      percentage,
      sticky,
      field: stickiness,
      prefix: rolloutPrefix(`${group}`, percentage),
    };
  if (!(percentage > 0)) return { ...NOTHING, kind: NEVER };
  return { kind: ROLLOUT_TOGGLE, percentage, sticky, field: stickiness, prefix: undefined };
}

function gradualRollout(parameters: Record<string, unknown>, field: 'userId' | 'sessionId'): Decision {
  const percentage = Number(primitive(parameters, 'percentage'));
  const prefix = rolloutPrefix(`${primitive(parameters, 'groupId') || ''}`, percentage);
  return { kind: GRADUAL, percentage, sticky: STICKY_FIELD, field, prefix };
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

/** Whether the SDK's host name is among the strategy's: the same for every context. */
function applicationHostname(parameters: Record<string, unknown>): boolean {
  const hostNames = stringParameter(parameters, 'hostNames');
  if (!hostNames) return false;
  const hostname = sdkHostname();
  if (hostname === undefined) throw new NotCompiled('the host name of the SDK is unknown');
  return hostNames
    .toLowerCase()
    .split(/\s*,\s*/)
    .includes(hostname);
}

function decisionOf(name: string, parameters: Record<string, unknown>): Decision {
  switch (name) {
    case 'default':
      return { ...NOTHING, kind: ALWAYS };
    case 'flexibleRollout':
      return flexibleRollout(parameters);
    case 'gradualRolloutUserId':
      return gradualRollout(parameters, 'userId');
    case 'gradualRolloutSessionId':
      return gradualRollout(parameters, 'sessionId');
    case 'gradualRolloutRandom':
      return { ...NOTHING, kind: RANDOM, percentage: Number(primitive(parameters, 'percentage')) };
    case 'userWithId':
      return { ...NOTHING, kind: SHARED, pure: userWithId(parameters) };
    case 'remoteAddress':
      return { ...NOTHING, kind: SHARED, pure: remoteAddress(parameters) };
    case 'applicationHostname':
      return { ...NOTHING, kind: applicationHostname(parameters) ? ALWAYS : NEVER };
    default:
      throw new NotCompiled(`strategy ${name}`);
  }
}

/**
 * The sticky value of a rollout for the scope's context, as the SDK's flexible rollout reads it;
 * undefined when the SDK throws its die (`default` without userId or sessionId, or `random`).
 */
function stickyValue(strategy: CompiledStrategy, scope: RequestScope): unknown {
  return rolloutSticky(strategy.sticky, strategy.fieldIndex, strategy.field, scope);
}

/** `stickyValue` for a rollout's sticky source, its field and the field's `fieldIndex`. */
export function rolloutSticky(sticky: number, index: number, field: string, scope: RequestScope): unknown {
  if (sticky === STICKY_DEFAULT) return defaultSticky(scope.userId, scope.sessionId);
  if (sticky === STICKY_RANDOM) return undefined;
  return scope.value(index, field);
}

/** `normalizedValue(id, groupId:) <= percentage` for a rollout's prefix, the id prepared once per request. */
function rolledIn(strategy: CompiledStrategy, prefix: HashPrefix, id: string, scope: RequestScope): boolean {
  return normalizedAfter(prefix, scope.key(id), 100) <= strategy.percentage;
}

/** Whether the strategy itself (its constraints aside) enables the toggle for the scope's context. */
function isEnabledFor(strategy: CompiledStrategy, scope: RequestScope): boolean {
  switch (strategy.kind) {
    case ALWAYS:
      return true;
    case SHARED:
      return scope.shared(strategy.sharedId, strategy.sharedCheck as Check);
    case ROLLOUT_GROUP: {
      const sticky = stickyValue(strategy, scope);
      // the die is thrown before the percentage is read, as the SDK throws it
      if (sticky === undefined && strategy.sticky !== STICKY_FIELD) {
        const die = rolloutDie();
        return (
          strategy.prefix !== undefined &&
          (continueHash(strategy.prefix, die) % 100) + 1 <= strategy.percentage
        );
      }
      if (!sticky || strategy.prefix === undefined) return false;
      return rolledIn(strategy, strategy.prefix, `${sticky as string}`, scope);
    }
    case ROLLOUT_TOGGLE: {
      const sticky =
        stickyValue(strategy, scope) ?? (strategy.sticky === STICKY_FIELD ? undefined : rolloutDie());
      if (!sticky) return false;
      const groupId: unknown = scope.featureToggle || '';
      return (
        normalizedValue(`${sticky as string}`, `${groupId as string}`, 100, STRATEGY_SEED) <=
        strategy.percentage
      );
    }
    case GRADUAL: {
      const id = strategy.field === 'userId' ? scope.userId : scope.sessionId;
      if (!id || strategy.prefix === undefined) return false;
      return rolledIn(strategy, strategy.prefix, `${id as string}`, scope);
    }
    case RANDOM:
      return strategy.percentage >= Math.floor(Math.random() * 100) + 1;
    default:
      return false;
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
  /** The numbering of the answers of the toggle this strategy belongs to. */
  slots: AnswerSlots,
): CompiledStrategy {
  if (!isRecord(strategy) || typeof strategy.name !== 'string') throw new NotCompiled('strategy shape');
  const raw: unknown = strategy.parameters;
  const variants: unknown = strategy.variants;
  const hasVariants = Array.isArray(variants) && variants.length > 0;
  if (!isRecord(raw) && (strategy.name !== 'default' || hasVariants || (raw !== undefined && raw !== null)))
    throw new NotCompiled('parameters not an object');
  const parameters = isRecord(raw) ? raw : {};
  const decision = decisionOf(strategy.name, parameters);
  // strategies answering from the context alone, the same for equal parameters: checked once per request
  const pure = PURE.get(strategy.name);
  const shared =
    pure === undefined || decision.pure === undefined
      ? undefined
      : checks.shared(
          JSON.stringify(['strategy', strategy.name, parameters[pure]]),
          () => decision.pure as Check,
        );
  const constraints = constraintChecks(strategy, checks, segment);
  let choice: VariantChoice | undefined;
  if (hasVariants) {
    const first: unknown = (variants as unknown[])[0];
    if (!isRecord(first)) throw new NotCompiled('a variant not an object');
    choice = compileVariantChoice(
      parameters.groupId,
      first.stickiness || parameters.stickiness,
      variants,
      slots,
    );
  }
  return {
    definition: strategy,
    checkIds: constraints.map((c) => c.id),
    checks: constraints.map((c) => c.check),
    kind: decision.kind,
    sharedId: shared?.id ?? -1,
    sharedCheck: shared?.check,
    percentage: decision.percentage,
    sticky: decision.sticky,
    field: decision.field,
    fieldIndex:
      decision.sticky === STICKY_FIELD && decision.kind !== GRADUAL ? fieldIndex(decision.field) : -1,
    prefix: decision.prefix,
    choice,
  };
}

/**
 * A compiled strategy for the scope's context, as `Strategy.getResult` answers it: undefined when
 * it does not enable the toggle, else its strategy variant's answer, or `ENABLED_ANSWER` when it
 * has none. Its constraints first (each shared check once per request), then the strategy itself.
 */
export function strategyResult(strategy: CompiledStrategy, scope: RequestScope): SdkVariant | undefined {
  const ids = strategy.checkIds;
  for (let i = 0; i < ids.length; i++) if (!scope.shared(ids[i], strategy.checks[i])) return undefined;
  if (!isEnabledFor(strategy, scope)) return undefined;
  if (strategy.choice === undefined) return ENABLED_ANSWER;
  return chooseVariant(strategy.choice, scope) ?? ENABLED_ANSWER;
}
