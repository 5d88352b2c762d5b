import type { SdkVariant } from '../../upstream/feature-repository';
import type { FeatureInterface, Segment, StrategyTransportInterface } from '../../upstream/sdk/types';
import { DISABLED_ANSWER, ENABLED_ANSWER } from '../../upstream/sdk/variant';
import type { Checks } from './checks';
import { NotCompiled } from './constraints';
import type { RequestScope } from './scope';
import { BUILT_IN, compileStrategy, strategyResult, type CompiledStrategy } from './strategies';
import { AnswerSlots, chooseVariant, compileVariantChoice, type VariantChoice } from './variants';

/** What compiling a toggle reads besides its definition (`FastEvaluation`'s lookups). */
export interface CompileSources {
  /** False for a strategy name a custom strategy has. */
  isBuiltInStrategy(name: string): boolean;
  segment(id: number): Segment | undefined;
  /** A dependency's parent, found by name among all of the environment's toggles. */
  feature(name: string): FeatureInterface | undefined;
}

/**
 * A toggle compiled: `evaluate` answers what `resolveVariant` (the SDK's `forceGetVariant`)
 * answers for the scope's context, with the same answer objects for the two fallback results and
 * an `EngineAnswer` of its own for each variant (numbered: `answerSlot`).
 */
export interface ToggleEvaluation {
  evaluate(scope: RequestScope): SdkVariant;
  /** The strategy definition that enabled the toggle in the last `evaluate`; undefined when none did. */
  readonly decided: StrategyTransportInterface | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

type ParentCheck = (scope: RequestScope) => boolean;

/**
 * `isParentDependencySatisfied` of `unleash-client` 6 for one dependency: a parent that itself has
 * dependencies fails; `enabled: false` wants it disabled; `variants` want it enabled with one of
 * them; otherwise it must be enabled. A missing parent is not compiled (the SDK warns about it).
 */
function compileDependency(dependency: unknown, sources: CompileSources, checks: Checks): ParentCheck {
  if (!isRecord(dependency) || typeof dependency.feature !== 'string')
    throw new NotCompiled('dependency shape');
  const parent = sources.feature(dependency.feature);
  if (!parent) throw new NotCompiled(`missing parent ${dependency.feature}`);
  const parentDependencies: unknown = parent.dependencies;
  if (parentDependencies !== undefined && parentDependencies !== null && !Array.isArray(parentDependencies))
    throw new NotCompiled('parent dependencies not a list');
  if (Array.isArray(parentDependencies) && parentDependencies.length > 0) return () => false;
  const evaluation = compileFeature(parent, sources, checks);
  const { enabled, variants } = dependency;
  if (enabled !== undefined && enabled !== null && typeof enabled !== 'boolean')
    throw new NotCompiled('dependency enabled not a boolean');
  if (enabled === false) return (scope) => !evaluation.evaluate(scope).feature_enabled;
  if (variants !== undefined && variants !== null && !Array.isArray(variants))
    throw new NotCompiled('dependency variants not a list');
  if (Array.isArray(variants) && variants.length > 0) {
    const wanted: unknown[] = variants;
    return (scope) => {
      const answer = evaluation.evaluate(scope);
      return answer.feature_enabled === true && wanted.includes(answer.name);
    };
  }
  return (scope) => evaluation.evaluate(scope).feature_enabled === true;
}

/**
 * Compiles one toggle as `unleash-client` 6 evaluates it (`Client.isFeatureEnabled`, then
 * `selectVariant`): dependencies, `enabled`, strategies in order until one enables it (custom and
 * unknown strategies are not compiled), then its variants. Throws `NotCompiled` for anything else.
 */
export function compileFeature(
  feature: FeatureInterface,
  sources: CompileSources,
  checks: Checks,
): ToggleEvaluation {
  if (!isRecord(feature) || typeof feature.name !== 'string') throw new NotCompiled('toggle shape');
  if (typeof feature.enabled !== 'boolean') throw new NotCompiled('enabled not a boolean');
  const dependencies: unknown = feature.dependencies;
  if (dependencies !== undefined && dependencies !== null && !Array.isArray(dependencies))
    throw new NotCompiled('dependencies not a list');
  const parents = (Array.isArray(dependencies) ? dependencies : []).map((d: unknown) =>
    compileDependency(d, sources, checks),
  );
  const strategies: unknown = feature.strategies;
  if (!Array.isArray(strategies)) throw new NotCompiled('strategies not a list');
  for (const s of strategies as unknown[]) {
    const name = isRecord(s) ? s.name : undefined;
    if (typeof name !== 'string' || !BUILT_IN.has(name) || !sources.isBuiltInStrategy(name))
      throw new NotCompiled(`strategy ${String(name)}`);
  }
  // every answer this toggle can give is numbered (`answerSlot`): its strategies' variants, then its own
  const slots = new AnswerSlots();
  const compiled: CompiledStrategy[] = (strategies as StrategyTransportInterface[]).map((s) =>
    compileStrategy(s, checks, (id) => sources.segment(id), slots),
  );
  const variants: unknown = feature.variants;
  let choice: VariantChoice | undefined;
  if (Array.isArray(variants) && variants.length > 0) {
    const first: unknown = variants[0];
    const stickiness: unknown = isRecord(first) ? (first.stickiness ?? undefined) : undefined;
    choice = compileVariantChoice(feature.name, stickiness, variants, slots);
  }
  return new CompiledFeature(parents, feature.enabled, compiled, choice);
}

/**
 * A compiled toggle: one class for every toggle, so evaluating one is a call of the same method on
 * data (not a closure of its own per toggle), and the strategies and variants it reads are
 * evaluated by one function each (`strategyResult`, `chooseVariant`).
 */
class CompiledFeature implements ToggleEvaluation {
  decided: StrategyTransportInterface | undefined = undefined;
  /** The one strategy of an enabled toggle without dependencies (most toggles): evaluated without the loops. */
  readonly single: CompiledStrategy | undefined;

  constructor(
    private readonly parents: readonly ParentCheck[],
    private readonly enabled: boolean,
    private readonly strategies: readonly CompiledStrategy[],
    /** The toggle's own variants. */
    readonly choice: VariantChoice | undefined,
  ) {
    this.single = enabled && parents.length === 0 && strategies.length === 1 ? strategies[0] : undefined;
  }

  evaluate(scope: RequestScope): SdkVariant {
    const single = this.single;
    if (single !== undefined) {
      const answer = strategyResult(single, scope);
      if (answer === undefined) {
        this.decided = undefined;
        return DISABLED_ANSWER;
      }
      this.decided = single.definition;
      if (answer !== ENABLED_ANSWER || this.choice === undefined) return answer;
      return chooseVariant(this.choice, scope) ?? ENABLED_ANSWER;
    }
    this.decided = undefined;
    const parents = this.parents;
    for (let i = 0; i < parents.length; i++) if (!parents[i](scope)) return DISABLED_ANSWER;
    if (!this.enabled) return DISABLED_ANSWER;
    const strategies = this.strategies;
    let answer: SdkVariant | undefined = strategies.length === 0 ? ENABLED_ANSWER : undefined;
    for (let i = 0; i < strategies.length; i++) {
      answer = strategyResult(strategies[i], scope);
      if (answer !== undefined) {
        this.decided = strategies[i].definition;
        break;
      }
    }
    if (answer === undefined) return DISABLED_ANSWER;
    if (answer !== ENABLED_ANSWER || this.choice === undefined) return answer;
    return chooseVariant(this.choice, scope) ?? ENABLED_ANSWER;
  }
}

/**
 * The strategy and the toggle's own variant choice of a compiled toggle that is enabled, has no
 * dependencies and one strategy (what `flat.ts` lays out); undefined for any other.
 */
export function singleStrategyOf(
  evaluation: ToggleEvaluation,
): { readonly strategy: CompiledStrategy; readonly choice: VariantChoice | undefined } | undefined {
  if (!(evaluation instanceof CompiledFeature) || evaluation.single === undefined) return undefined;
  return { strategy: evaluation.single, choice: evaluation.choice };
}
