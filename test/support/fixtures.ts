import type { FeaturesPayload } from './upstream';

/** Realistic definitions: strategies, constraints, segments, variants with string and json payloads. */
export function sampleFeatures(): FeaturesPayload {
  return {
    version: 2,
    segments: [
      {
        id: 1,
        name: 'beta-users',
        constraints: [{ contextName: 'userId', operator: 'IN', values: ['beta-1', 'beta-2'] }],
      },
    ],
    features: [
      { name: 'always-on', enabled: true, project: 'default', strategies: [{ name: 'default' }] },
      { name: 'switched-off', enabled: false, project: 'default', strategies: [{ name: 'default' }] },
      {
        name: 'with-variants',
        enabled: true,
        impressionData: true,
        project: 'default',
        strategies: [{ name: 'default' }],
        variants: [
          {
            name: 'blue',
            weight: 500,
            stickiness: 'default',
            payload: { type: 'string', value: 'blue-theme' },
          },
          {
            name: 'config',
            weight: 500,
            stickiness: 'default',
            payload: { type: 'json', value: '{"color":"red","size":3}' },
          },
        ],
      },
      {
        name: 'user-named-disabled',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'default' }],
        variants: [{ name: 'disabled', weight: 1000, stickiness: 'default' }],
      },
      {
        name: 'for-alice',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'userWithId', parameters: { userIds: 'alice,bob' } }],
      },
      {
        name: 'plan-pro',
        enabled: true,
        project: 'default',
        strategies: [
          { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
        ],
      },
      {
        name: 'beta-segment',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'default', segments: [1] }],
      },
      {
        name: 'prod-only',
        enabled: true,
        project: 'default',
        strategies: [
          {
            name: 'default',
            constraints: [{ contextName: 'environment', operator: 'IN', values: ['production'] }],
          },
        ],
      },
      {
        name: 'office-ip',
        enabled: true,
        project: 'default',
        strategies: [{ name: 'remoteAddress', parameters: { IPs: '10.1.2.3' } }],
      },
      {
        name: 'new-app-version',
        enabled: true,
        project: 'other',
        strategies: [
          {
            name: 'default',
            constraints: [{ contextName: 'version', operator: 'SEMVER_GT', value: '2.0.0' }],
          },
        ],
      },
    ],
  };
}

/**
 * `count` toggles named `toggle-000`… (`digits` wide), each on for one user: user-k has exactly the
 * toggles i with i % `users` === k, so an answer's size and content follow from the user asked.
 */
export function togglesByUser(count: number, users: number, digits = 3): FeaturesPayload {
  return {
    version: 2,
    features: Array.from({ length: count }, (_, i) => ({
      name: `toggle-${String(i).padStart(digits, '0')}`,
      enabled: true,
      strategies: [{ name: 'userWithId', parameters: { userIds: `user-${i % users}` } }],
    })),
  };
}
