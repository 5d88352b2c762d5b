import { readFileSync } from 'node:fs';
import path from 'node:path';
import { silentLogger } from '../../../src/common/logging/logger';
import { MAX_TIMER_DELAY_MS, timerDelay } from '../../../src/common/timers/timer-delay';
import { PROXY_OPTIONS } from '../../../src/proxy/config/options';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { configProblems } from '../../support/config-problems';

const REQUIRED = {
  FLAGS_URL: 'http://upstream:4242/api',
  FLAGS_API_TOKEN: 'tok',
  FLAGS_PROXY_CLIENT_KEYS: 'k1',
};
const OFFLINE = { BOOTSTRAP_FILE: '/nonexistent/features.json', FRONTEND_TOKENS: 'f1' };

/** Every interval and timeout variable, the largest value it accepts, and its unit. */
const BOUNDS: ReadonlyArray<[variable: string, max: number, shown: string, env: Record<string, string>]> = [
  ['FLAGS_FETCH_INTERVAL', 86_400_000, '86400000 ms (1 day)', REQUIRED],
  ['UNLEASH_FETCH_INTERVAL', 86_400_000, '86400000 ms (1 day)', REQUIRED],
  ['FEATURES_REFRESH_INTERVAL_SECONDS', 86_400, '86400 s (1 day)', REQUIRED],
  ['FLAGS_METRICS_INTERVAL', 86_400_000, '86400000 ms (1 day)', REQUIRED],
  ['METRICS_INTERVAL_SECONDS', 86_400, '86400 s (1 day)', REQUIRED],
  ['FLAGS_METRICS_JITTER', 3_600_000, '3600000 ms (1 hour)', REQUIRED],
  ['FLAGS_TOKEN_REVALIDATE_INTERVAL', 86_400_000, '86400000 ms (1 day)', REQUIRED],
  ['TOKEN_REVALIDATION_INTERVAL_SECONDS', 86_400, '86400 s (1 day)', REQUIRED],
  ['UPSTREAM_REQUEST_TIMEOUT', 600, '600 s (10 minutes)', REQUIRED],
  ['FLAGS_PROMETHEUS_CACHE_INTERVAL', 3_600_000, '3600000 ms (1 hour)', REQUIRED],
  ['FLAGS_STREAM_HEARTBEAT_INTERVAL', 3_600_000, '3600000 ms (1 hour)', REQUIRED],
  ['RELOAD_INTERVAL', 86_400, '86400 s (1 day)', OFFLINE],
];

describe('the maxima of intervals and timeouts', () => {
  test.each(BOUNDS)('%s accepts its maximum, %d', (variable, max, _shown, env) => {
    expect(() => parseConfig({ logger: silentLogger }, { ...env, [variable]: String(max) })).not.toThrow();
  });

  test.each(BOUNDS)(
    '%s one past its maximum stops start-up with one line naming the variable and the bound',
    (variable, max, shown, env) => {
      const problems = configProblems(() =>
        parseConfig({ logger: silentLogger }, { ...env, [variable]: String(max + 1) }),
      );
      expect(problems).toHaveLength(1);
      expect(problems[0]).toContain(variable);
      expect(problems[0]).toContain(`at most ${shown}`);
    },
  );

  test('the reproductions of a month are refused, each naming the variable the operator set', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ FEATURES_REFRESH_INTERVAL_SECONDS: '2592000' }, 'FEATURES_REFRESH_INTERVAL_SECONDS="2592000"'],
      [{ FLAGS_FETCH_INTERVAL: '2592000000' }, 'FLAGS_FETCH_INTERVAL="2592000000"'],
      [{ TOKEN_REVALIDATION_INTERVAL_SECONDS: '2592000' }, 'TOKEN_REVALIDATION_INTERVAL_SECONDS="2592000"'],
      [{ METRICS_INTERVAL_SECONDS: '2592000' }, 'METRICS_INTERVAL_SECONDS="2592000"'],
    ];
    for (const [vars, named] of cases) {
      expect(configProblems(() => parseConfig({ logger: silentLogger }, { ...REQUIRED, ...vars }))).toEqual([
        expect.stringContaining(named),
      ]);
    }
    expect(
      configProblems(() => parseConfig({ logger: silentLogger }, { ...OFFLINE, RELOAD_INTERVAL: '2147484' })),
    ).toEqual(['Invalid RELOAD_INTERVAL="2147484": must be at most 86400 s (1 day)']);
  });

  test('an alias past the bound is named as given, with what it is an alias of', () => {
    expect(
      configProblems(() =>
        parseConfig({ logger: silentLogger }, { ...REQUIRED, UNLEASH_METRICS_INTERVAL: '90000000' }),
      ),
    ).toEqual([
      'Invalid UNLEASH_METRICS_INTERVAL="90000000" (alias of FLAGS_METRICS_INTERVAL): must be at most 86400000 ms (1 day)',
    ]);
  });

  test('an interval given in code past its bound is refused too, naming the option', () => {
    expect(
      configProblems(() => parseConfig({ logger: silentLogger, refreshInterval: 2 ** 31 }, REQUIRED)),
    ).toEqual(['Invalid option refreshInterval: must be at most 86400000 ms (1 day)']);
  });

  test("Edge's seconds at their bound make intervals a timer holds", () => {
    const config = parseConfig(
      { logger: silentLogger },
      {
        ...REQUIRED,
        FEATURES_REFRESH_INTERVAL_SECONDS: '86400',
        METRICS_INTERVAL_SECONDS: '86400',
        TOKEN_REVALIDATION_INTERVAL_SECONDS: '86400',
      },
    );
    expect(config.refreshInterval).toBe(86_400_000);
    expect(config.metricsInterval).toBe(86_400_000);
    expect(config.tokenRevalidateInterval).toBe(86_400_000);
  });

  test('every option named as an interval, a timeout or a jitter declares a maximum', () => {
    const timed = PROXY_OPTIONS.filter((o) => /interval|timeout|jitter/i.test(o.key));
    expect(timed.map((o) => o.key).sort()).toEqual(
      [
        'featuresRefreshIntervalSeconds',
        'metricsInterval',
        'metricsIntervalSeconds',
        'metricsJitter',
        'prometheusCacheInterval',
        'refreshInterval',
        'reloadInterval',
        'streamHeartbeatInterval',
        'tokenRevalidateInterval',
        'tokenRevalidationIntervalSeconds',
        'upstreamRequestTimeout',
      ].sort(),
    );
    expect(timed.filter((o) => o.max === undefined).map((o) => o.key)).toEqual([]);
  });

  test("the option table and Edge's variable table show each bound", () => {
    const page = (name: string) => readFileSync(path.resolve(__dirname, '../../../docs', name), 'utf8');
    const tables = `${page('configuration.md')}\n${page('unleash-edge.md')}`;
    const row = (name: string) => tables.split('\n').filter((line) => line.includes(`\`${name}\``));
    expect(row('FLAGS_FETCH_INTERVAL').join('\n')).toContain('at most 86400000 ms (1 day)');
    expect(row('RELOAD_INTERVAL').join('\n')).toContain('at most 86400 s (1 day)');
    const edgeRow = row('FEATURES_REFRESH_INTERVAL_SECONDS').filter((line) => line.includes('| yes |'));
    expect(edgeRow).toHaveLength(1);
    expect(edgeRow[0]).toContain('at most 86400 s (1 day)');
  });
});

describe('the timer seam', () => {
  test('a delay a Node timer cannot hold waits the longest it can, never 1 ms', () => {
    expect(MAX_TIMER_DELAY_MS).toBe(2_147_483_647);
    expect(timerDelay(2_592_000_000)).toBe(2_147_483_647);
    expect(timerDelay(2_147_483_648)).toBe(2_147_483_647);
    expect(timerDelay(Number.POSITIVE_INFINITY)).toBe(2_147_483_647);
    expect(timerDelay(Number.NaN)).toBe(2_147_483_647);
    expect(timerDelay(2_147_483_647)).toBe(2_147_483_647);
    expect(timerDelay(5000)).toBe(5000);
    expect(timerDelay(-5)).toBe(0);
  });

  test('a timer made with the clamped delay of a month does not fire at once and warns of nothing', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    let fired = 0;
    const timer = setInterval(() => (fired += 1), timerDelay(2_592_000_000));
    // Two turns of the event loop with a 1 ms timer between: an overflowed delay would have fired.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setImmediate(resolve));
    clearInterval(timer);
    process.off('warning', onWarning);
    expect(fired).toBe(0);
    expect(warnings).not.toContain('TimeoutOverflowWarning');
  });
});
