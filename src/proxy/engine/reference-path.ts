import type { Context } from 'unleash-client';
import { ownCopy } from '../context/build-context';
import type { EvaluatedToggle, FeatureRepository } from '../upstream/feature-repository';
import type { Outcome } from './outcomes';
import type { Selection } from './requests';
import { disabledToggle, toEvaluatedToggle, toggleEntry } from './toggle-json';

/**
 * The reference path: every toggle evaluated by the SDK's public API on every request, while the
 * SDK's full evaluation must run (someone listens to its impression events). Nothing is compiled,
 * remembered or kept.
 */

/** One toggle on the reference path; undefined for a name the definitions lack. */
export function referenceToggle(
  features: FeatureRepository,
  name: string,
  context: Context,
): Pick<Outcome, 'enabled' | 'entry'> | undefined {
  const feature = features.toggle(name);
  if (!feature) return undefined;
  const impressionData = feature.impressionData === true;
  const result = features.evaluate(name, ownCopy(context));
  const toggle = result
    ? toEvaluatedToggle(name, impressionData, result)
    : disabledToggle(name, impressionData);
  return { enabled: toggle.enabled, entry: toggleEntry(toggle) };
}

/** `/proxy`'s toggle list for a selection on the reference path. */
export function referenceBody(features: FeatureRepository, selection: Selection, context: Context): string {
  const known = new Set(features.toggles().map((f) => f.name));
  // `evaluate` answers a quarantined toggle undefined without calling the SDK: disabled below.
  const names =
    selection.kind === 'named' ? uniqueNames(selection.names) : features.toggles().map((f) => f.name);
  const toggles: EvaluatedToggle[] = [];
  for (const name of names) {
    if (!known.has(name)) {
      toggles.push(disabledToggle(name, false));
      continue;
    }
    const impressionData = features.toggle(name)?.impressionData === true;
    const result = features.evaluate(name, ownCopy(context));
    const toggle = result
      ? toEvaluatedToggle(name, impressionData, result)
      : disabledToggle(name, impressionData);
    if (selection.kind !== 'enabled' || toggle.enabled) toggles.push(toggle);
  }
  return JSON.stringify({ toggles });
}

/** Names in their first order, each once. */
export function uniqueNames(names: readonly string[]): string[] {
  return [...new Set(names)];
}
