import type { ApiResponse, ClientFeaturesResponse } from './sdk/types';

/**
 * Where an answer of the upstream (or a bootstrap, or a stored backup) is checked before the SDK
 * takes it. An answer is refused as a whole only when it is not a definitions document at all:
 * `features` (or a delta's `events`) is not a list. Entries the SDK cannot store (a toggle that is
 * not an object or has no string name, a segment that is not an object) are dropped alone and
 * named; everything else is the SDK's to evaluate (see `toggle-faults.ts` for what is quarantined).
 */
export type DocumentCheck =
  { readonly accepted: ApiResponse; readonly dropped: readonly string[] } | { readonly refused: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function keptFeatures(list: unknown[], path: string, dropped: string[]): ClientFeaturesResponse['features'] {
  return list.filter((f, i): f is ClientFeaturesResponse['features'][number] => {
    if (!isRecord(f)) dropped.push(`${path}[${i}]: not an object`);
    else if (typeof f.name !== 'string') dropped.push(`${path}[${i}].name: not a string`);
    else return true;
    return false;
  });
}

function keptSegments(list: unknown, path: string, dropped: string[]): ClientFeaturesResponse['segments'] {
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list)) {
    dropped.push(`${path}: not a list`);
    return [];
  }
  return list.filter((s, i): s is NonNullable<ClientFeaturesResponse['segments']>[number] => {
    if (isRecord(s)) return true;
    dropped.push(`${path}[${i}]: not an object`);
    return false;
  });
}

function checkDelta(events: unknown[], dropped: string[]): unknown[] {
  return events.flatMap((event, i) => {
    const at = `events[${i}]`;
    if (!isRecord(event)) {
      dropped.push(`${at}: not an object`);
      return [];
    }
    switch (event.type) {
      case 'feature-updated':
        if (!isRecord(event.feature) || typeof event.feature.name !== 'string') {
          dropped.push(`${at}.feature: not a toggle with a string name`);
          return [];
        }
        return [event];
      case 'segment-updated':
        if (!isRecord(event.segment)) {
          dropped.push(`${at}.segment: not an object`);
          return [];
        }
        return [event];
      case 'hydration': {
        if (!Array.isArray(event.features)) {
          dropped.push(`${at}.features: not a list`);
          return [];
        }
        const features = keptFeatures(event.features, `${at}.features`, dropped);
        return [
          { ...event, features, segments: keptSegments(event.segments, `${at}.segments`, dropped) ?? [] },
        ];
      }
      default:
        return [event];
    }
  });
}

/** Checks one answer (see the module comment). */
export function checkDocument(response: unknown): DocumentCheck {
  if (!isRecord(response)) return { refused: 'the answer is not a JSON object' };
  const dropped: string[] = [];
  if (response.type === 'delta') {
    if (!Array.isArray(response.events)) return { refused: 'events: not a list' };
    const events = checkDelta(response.events, dropped);
    return { accepted: { ...response, events } as unknown as ApiResponse, dropped };
  }
  if (!Array.isArray(response.features)) return { refused: 'features: not a list' };
  const features = keptFeatures(response.features, 'features', dropped);
  const segments = keptSegments(response.segments, 'segments', dropped);
  const accepted = { ...response, type: 'full', features, segments } as unknown as ApiResponse;
  return { accepted, dropped };
}

/** Keeps the toggles of one project (and those without a project): the other ones are never known. */
export function onlyProject(response: ApiResponse, project: string): ApiResponse {
  const ours = (f: { project?: unknown }) =>
    f.project === undefined || f.project === null || f.project === project;
  if (response.type === 'full') return { ...response, features: response.features.filter(ours) };
  const events = response.events.map((event) => {
    if (event.type === 'feature-updated' && !ours(event.feature)) {
      // a toggle moved to another project is gone for this proxy
      return {
        type: 'feature-removed' as const,
        eventId: event.eventId,
        featureName: event.feature.name,
        project,
      };
    }
    if (event.type === 'hydration') return { ...event, features: event.features.filter(ours) };
    return event;
  });
  return { ...response, events } as ApiResponse;
}
