import { Writable } from 'node:stream';
import { createLogger, tell } from '../../../src/common/logging/logger';
import { startBuiltProxy, type BuiltProxy } from '../../support/built-proxy';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const DEV_TOKEN = '*:development.dev-upstream-secret-5f1c';
const PROD_TOKEN = '*:production.prod-upstream-secret-9a2e';
const CLIENT_KEY = 'operator-lines-client-key-77d3';
const SECRETS = [DEV_TOKEN, PROD_TOKEN, CLIENT_KEY, 'dev-upstream-secret-5f1c', 'prod-upstream-secret-9a2e'];

const linesWith = (output: string, text: string) => output.split('\n').filter((l) => l.includes(text));

describe('the lines an operator reads at the default level', () => {
  let upstream: TestUpstream;
  let proxy: BuiltProxy | undefined;

  beforeEach(async () => {
    const production = sampleFeatures();
    production.features = production.features.slice(0, 2);
    upstream = await new TestUpstream(sampleFeatures(), DEV_TOKEN).addToken(PROD_TOKEN, production).start();
  });

  afterEach(async () => {
    await proxy?.stop();
    proxy = undefined;
    await upstream.stop();
  });

  it('tells listening, each environment ready, the upstream lost once and back once, stopping and stopped, and never a secret', async () => {
    proxy = await startBuiltProxy(
      {
        FLAGS_URL: upstream.url,
        FLAGS_API_TOKEN: `${DEV_TOKEN},${PROD_TOKEN}`,
        FLAGS_PROXY_CLIENT_KEYS: CLIENT_KEY,
        FLAGS_FETCH_INTERVAL: '100',
        PROXY_BASE_PATH: '/flags',
      },
      { livenessPath: '/flags/internal-backstage/health' },
    );
    const running = proxy;
    await waitFor(() => linesWith(running.output(), 'ready:').length === 2, 15_000);
    const output = () => running.output();

    const [listening, ...moreListening] = linesWith(output(), 'listening on');
    expect(moreListening).toEqual([]);
    expect(listening).toMatch(
      new RegExp(
        `INFO flags-proxy: flags-proxy listening on port ${running.port} on every interface \\(::\\), base path "/flags" \\(endpoints under /flags/proxy, backstage under /flags/internal-backstage\\); the specification's contract`,
      ),
    );
    expect(linesWith(output(), 'environment "development" ready')).toEqual([
      expect.stringMatching(
        new RegExp(
          `INFO flags-proxy: environment "development" ready: ${sampleFeatures().features.length} flag definitions$`,
        ),
      ),
    ]);
    expect(linesWith(output(), 'environment "production" ready')).toEqual([
      expect.stringMatching(/environment "production" ready: 2 flag definitions$/),
    ]);

    // An outage of many polls of both environments: one line per environment.
    upstream.fault = { status: 500 };
    let failedFrom = upstream.featureRequests().length;
    await waitFor(
      () =>
        linesWith(output(), ' is lost: ').length === 2 && upstream.featureRequests().length >= failedFrom + 8,
      15_000,
    );
    // Polls that failed after both lines were written (the poller backs off: a few more).
    failedFrom = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= failedFrom + 4, 15_000);
    upstream.fault = undefined;
    await waitFor(() => linesWith(output(), ' is back after ').length === 2, 15_000);
    const answeredFrom = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= answeredFrom + 4, 15_000);

    const lost = linesWith(output(), ' is lost: ');
    expect(lost).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /WARN flags-proxy: the upstream http:\/\/127\.0\.0\.1:\d+\/api\/client\/features of environment "development" is lost: .*500/,
        ),
        expect.stringMatching(/of environment "production" is lost: .*500/),
      ]),
    );
    expect(lost).toHaveLength(2);
    const back = linesWith(output(), ' is back after ');
    expect(back).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /INFO flags-proxy: the upstream .* of environment "development" is back after \d+ s \(\d+ failed requests\)/,
        ),
        expect.stringMatching(/of environment "production" is back after/),
      ]),
    );
    expect(back).toHaveLength(2);
    // Nothing else about the failed polls reached the default level.
    expect(linesWith(output(), '500').filter((l) => !l.includes(' is lost: '))).toEqual([]);

    expect(await running.stop()).toBe(0);
    const stopping = linesWith(output(), 'flags-proxy stopping');
    const stopped = linesWith(output(), 'flags-proxy stopped');
    expect(stopping).toHaveLength(1);
    expect(stopped).toHaveLength(1);
    expect(output().indexOf(stopping[0])).toBeLessThan(output().indexOf(stopped[0]));
    for (const secret of SECRETS) expect(output()).not.toContain(secret);
    proxy = undefined;
  }, 60_000);

  it('LOG_LEVEL=error hides the story lines', async () => {
    proxy = await startBuiltProxy({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: DEV_TOKEN,
      FLAGS_PROXY_CLIENT_KEYS: CLIENT_KEY,
      LOG_LEVEL: 'error',
    });
    const running = proxy;
    await waitFor(async () => (await fetch(`${running.origin}/proxy/health`)).status === 200, 15_000);
    expect(await running.stop()).toBe(0);
    expect(running.output()).toBe('');
    proxy = undefined;
  }, 30_000);
});

describe('the default logger and the story lines', () => {
  const capture = () => {
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    return { destination, text: () => chunks.join('') };
  };

  it.each([
    ['debug', true],
    ['info', true],
    ['warn', true],
    ['error', false],
    ['fatal', false],
  ] as const)('at %s the story is shown: %s, as an info line', (level, shown) => {
    const out = capture();
    const logger = createLogger({ level, json: true, name: 'flags-proxy', destination: out.destination });
    tell(logger, 'flags-proxy listening on port 1');
    logger.info('an ordinary info line');
    const lines = out
      .text()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    const story = lines.filter((l) => l.msg === 'flags-proxy listening on port 1');
    expect(story).toEqual(shown ? [expect.objectContaining({ level: 30 })] : []);
    expect(lines.some((l) => l.msg === 'an ordinary info line')).toBe(level === 'debug' || level === 'info');
  });

  it('a logger without notice receives the story through info', () => {
    const infos: string[] = [];
    const logger = {
      debug: () => undefined,
      info: (msg: string) => void infos.push(msg),
      warn: () => undefined,
      error: () => undefined,
      fatal: () => undefined,
    };
    tell(logger, 'flags-proxy stopped');
    expect(infos).toEqual(['flags-proxy stopped']);
  });
});
