/** Realistic generated flag definitions for the benchmark: the mix a product team accumulates. */

/**
 * A new user's fields besides the ids, as the bench's requests give them in a query: `appName`,
 * `environment` and five properties, every property read by the generated constraints.
 */
export const NEW_USER_QUERY =
  'appName=web&environment=production&plan=pro&version=2.3.1&region=eu&age=31&email=ada%40example.com';

export interface BenchFeatures {
  version: number;
  features: unknown[];
  segments: unknown[];
}

/** A small deterministic PRNG so every run benchmarks the same definitions. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEGMENTS = [
  {
    id: 1,
    name: 'beta-testers',
    constraints: [{ contextName: 'userId', operator: 'IN', values: ['user-1', 'user-42', 'user-77'] }],
  },
  { id: 2, name: 'eu', constraints: [{ contextName: 'region', operator: 'IN', values: ['eu', 'uk'] }] },
  {
    id: 3,
    name: 'internal',
    constraints: [{ contextName: 'email', operator: 'STR_ENDS_WITH', values: ['@example.com'] }],
  },
  {
    id: 4,
    name: 'mobile',
    constraints: [{ contextName: 'appName', operator: 'STR_STARTS_WITH', values: ['ios', 'android'] }],
  },
];

function variants(name: string, stickiness: string, rand: () => number): unknown[] {
  return [
    { name: 'control', weight: 500, stickiness, payload: { type: 'string', value: `${name}-control` } },
    {
      name: 'treatment',
      weight: 500,
      stickiness,
      payload: { type: 'json', value: JSON.stringify({ color: rand() > 0.5 ? 'blue' : 'green', size: 3 }) },
    },
  ];
}

/** `n` features; kinds cycle so every N has the same proportions. */
export function generateFeatures(n: number, seed = 42): BenchFeatures {
  const rand = prng(seed);
  const features: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const name = `${['checkout', 'search', 'profile', 'billing', 'onboarding', 'feed'][i % 6]}.flag-${String(i).padStart(5, '0')}`;
    const base = {
      name,
      enabled: true,
      project: 'default',
      type: 'release',
      stale: false,
      impressionData: i % 9 === 0,
    };
    const pct = String(10 + Math.floor(rand() * 80));
    let strategies: unknown[];
    let featureVariants: unknown[] = [];
    switch (i % 14) {
      case 0:
        strategies = [{ name: 'default', parameters: {}, constraints: [] }];
        break;
      case 1:
        strategies = [{ name: 'default', parameters: {} }];
        features.push({ ...base, enabled: false, strategies });
        continue;
      case 2:
        strategies = [
          { name: 'flexibleRollout', parameters: { rollout: pct, stickiness: 'userId', groupId: name } },
        ];
        break;
      case 3:
        strategies = [
          { name: 'flexibleRollout', parameters: { rollout: pct, stickiness: 'default', groupId: name } },
        ];
        featureVariants = variants(name, 'default', rand);
        break;
      case 4:
        // Random rollouts are usually experiments on a slice of users: gated by a constraint.
        strategies = [
          {
            name: 'gradualRolloutRandom',
            parameters: { percentage: pct },
            constraints: [{ contextName: 'plan', operator: 'IN', values: ['free'] }],
          },
        ];
        break;
      case 5:
        strategies = [{ name: 'userWithId', parameters: { userIds: 'user-1,user-42,user-99,admin' } }];
        break;
      case 6:
        strategies = [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.0/8,127.0.0.1' } }];
        break;
      case 7:
        strategies = [
          {
            name: 'default',
            constraints: [
              { contextName: 'plan', operator: 'IN', values: ['pro', 'enterprise'] },
              { contextName: 'version', operator: 'SEMVER_GTE', value: '2.0.0' },
            ],
          },
        ];
        break;
      case 8:
        strategies = [
          {
            name: 'default',
            constraints: [
              { contextName: 'currentTime', operator: 'DATE_AFTER', value: '2024-01-01T00:00:00.000Z' },
              { contextName: 'age', operator: 'NUM_GTE', value: '18' },
            ],
          },
        ];
        break;
      case 9:
        strategies = [{ name: 'default', segments: [1 + (i % SEGMENTS.length)] }];
        break;
      case 10:
        strategies = [
          {
            name: 'flexibleRollout',
            parameters: { rollout: pct, stickiness: 'sessionId', groupId: name },
            variants: variants(name, 'sessionId', rand),
          },
        ];
        break;
      case 11:
        strategies = [
          {
            name: 'default',
            constraints: [
              { contextName: 'region', operator: 'NOT_IN', values: ['cn', 'ru'] },
              { contextName: 'email', operator: 'STR_CONTAINS', values: ['@'], caseInsensitive: true },
            ],
          },
        ];
        featureVariants = variants(name, 'userId', rand);
        break;
      case 12:
        strategies = [
          {
            name: 'flexibleRollout',
            parameters: { rollout: pct, stickiness: 'random', groupId: name },
            constraints: [{ contextName: 'region', operator: 'IN', values: ['us', 'ca'] }],
          },
        ];
        break;
      default:
        strategies = [
          {
            name: 'default',
            constraints: [
              { contextName: 'currentTime', operator: 'DATE_BEFORE', value: '2099-12-31T00:00:00.000Z' },
            ],
          },
        ];
        break;
    }
    features.push(
      featureVariants.length > 0
        ? { ...base, strategies, variants: featureVariants }
        : { ...base, strategies },
    );
  }
  return { version: 2, features, segments: SEGMENTS };
}

/** `count` names of generated features, spread over the set (for POST with named toggles). */
export function someNames(features: BenchFeatures, count: number): string[] {
  const names = features.features.map((f) => (f as { name: string }).name);
  const step = Math.max(1, Math.floor(names.length / count));
  const picked: string[] = [];
  for (let i = 0; i < names.length && picked.length < count; i += step) picked.push(names[i]);
  return picked;
}
