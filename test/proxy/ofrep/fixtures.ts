import { sampleFeatures } from '../../support/fixtures';
import type { FeaturesPayload } from '../../support/upstream';

const variant = (name: string, type: string, value: string, weight = 500) => ({
  name,
  weight,
  stickiness: 'default',
  payload: { type, value },
});

/** The shared sample definitions plus toggles of every OFREP type and reason. */
export function ofrepFeatures(): FeaturesPayload {
  const base = sampleFeatures();
  return {
    ...base,
    features: [
      ...base.features,
      {
        name: 'banner-text',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'default', parameters: {} }],
        variants: [variant('hello', 'string', 'Hello!', 1000), variant('csv', 'csv', 'a,b', 0)],
      },
      {
        name: 'max-items',
        enabled: true,
        project: 'default',
        strategies: [
          {
            name: 'flexibleRollout',
            parameters: { rollout: '100', stickiness: 'default', groupId: 'max-items' },
            constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }],
            variants: [variant('ten', 'number', '10', 1000)],
          },
        ],
      },
      {
        name: 'theme-config',
        enabled: true,
        project: 'default',
        strategies: [
          {
            name: 'flexibleRollout',
            parameters: { rollout: '100', stickiness: 'default', groupId: 'theme-config' },
            variants: [variant('dark', 'json', '{"mode":"dark","contrast":2}', 1000)],
          },
        ],
      },
      {
        name: 'half-rollout',
        enabled: true,
        project: 'default',
        strategies: [
          { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'half' } },
        ],
      },
      {
        name: 'broken-number',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'default', parameters: {} }],
        variants: [variant('oops', 'number', 'not-a-number', 1000)],
      },
      {
        name: 'child-of-always-on',
        enabled: true,
        project: 'default',
        strategies: [],
        dependencies: [{ feature: 'always-on' }],
      },
    ],
  };
}

/** The definitions with one toggle's `enabled` switched. */
export function withToggle(payload: FeaturesPayload, name: string, enabled: boolean): FeaturesPayload {
  return {
    ...payload,
    features: payload.features.map((f) =>
      (f as { name: string }).name === name ? { ...(f as object), enabled } : f,
    ),
  };
}
