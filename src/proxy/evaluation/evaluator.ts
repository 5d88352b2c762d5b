import type { Context } from 'unleash-client';
import type { EvaluatedToggle, FeatureRepository } from '../upstream/feature-repository';

/** Evaluates toggles for one context: one SDK evaluation per toggle per request. */
export class Evaluator {
  constructor(private readonly features: FeatureRepository) {}

  /** Toggles enabled for the context, sorted by name. */
  enabled(context: Context): EvaluatedToggle[] {
    const result: EvaluatedToggle[] = [];
    for (const feature of this.features.toggles()) {
      const toggle = this.features.evaluate(feature.name, context);
      if (toggle.enabled) result.push(toggle);
    }
    return result;
  }

  /** Every known toggle with its evaluation, sorted by name. */
  all(context: Context): EvaluatedToggle[] {
    return this.features.toggles().map((feature) => this.features.evaluate(feature.name, context));
  }

  /** The named toggles in request order, duplicates removed; unknown names come back disabled. */
  named(context: Context, names: readonly string[]): EvaluatedToggle[] {
    return [...new Set(names)].map((name) => this.features.evaluate(name, context));
  }
}
