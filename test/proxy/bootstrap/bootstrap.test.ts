import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http, { type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import type { ClientFeaturesResponse } from 'unleash-client';
import type { StorageProvider } from 'unleash-client/lib/repository/storage-provider';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import { silentLogger } from '../../../src/common/logging/logger';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, proxyFor, waitFor } from '../../support/proxy';
import { type FeaturesPayload, TestUpstream } from '../../support/upstream';

const BOOTSTRAP_AUTH = 'bootstrap-secret';

function definitions(name: string): FeaturesPayload {
  return {
    version: 2,
    features: [
      { name, enabled: true, strategies: [{ name: 'default' }] },
      { name: `${name}-off`, enabled: false, strategies: [{ name: 'default' }] },
    ],
  };
}

/** A port nothing listens on: the upstream is unreachable. */
async function closedPortUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/api`;
}

/** Serves a definitions file on loopback and records the headers of each request. */
class BootstrapServer {
  readonly requests: IncomingHttpHeaders[] = [];
  private readonly server: Server;
  constructor(payload: FeaturesPayload) {
    this.server = http.createServer((req, res) => {
      this.requests.push(req.headers);
      if (req.headers.authorization !== BOOTSTRAP_AUTH) return void res.writeHead(401).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/bootstrap.json`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A storage provider kept in a Map, as a user could write one over Redis or S3. */
class MapStorage implements StorageProvider<ClientFeaturesResponse> {
  readonly data = new Map<string, ClientFeaturesResponse>();
  readonly gets: string[] = [];
  async set(key: string, value: ClientFeaturesResponse): Promise<void> {
    this.data.set(key, value);
  }
  async get(key: string): Promise<ClientFeaturesResponse | undefined> {
    this.gets.push(key);
    return this.data.get(key);
  }
}

const names = (body: { toggles: Array<{ name: string }> }) => body.toggles.map((t) => t.name);

// The tests of each block run concurrently (most of their time is the SDK giving up on an unreachable
// upstream: a GET and two retries, 1 s and 2 s apart): each has its own proxy and bootstrap source, and
// *Each hooks do not run for concurrent tests, so what they start is closed in afterAll.
describe('bootstrap and storage provider', () => {
  let unreachable: string;
  const apps: ProxyApp[] = [];
  const track = (app: ProxyApp) => (apps.push(app), app);
  const sources: BootstrapServer[] = [];
  /** A bootstrap source of this test alone, so what it records is this test's requests. */
  const bootstrapSource = async () => {
    const source = await new BootstrapServer(definitions('from-bootstrap')).start();
    sources.push(source);
    return source;
  };
  /** Closes a proxy of a test that stops its own upstream next. */
  const closeNow = async (app: ProxyApp | undefined) => {
    if (!app) return;
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  const base = () => ({
    flagsApiToken: 'upstream-token',
    clientKeys: [CLIENT_KEY],
    // One failing fetch cycle only: the SDK retries a failed GET on timers that cannot be cancelled.
    refreshInterval: 60_000,
    metricsInterval: 0,
    logger: silentLogger,
  });
  /** Waits until the SDK gave up its first fetch of the unreachable upstream, so close leaves no timer. */
  const upstreamFailed = (app: ProxyApp) => waitFor(() => app.features.stats.fetchErrors > 0, 15_000);

  beforeAll(async () => {
    unreachable = await closedPortUrl();
  });
  afterAll(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await Promise.all(sources.splice(0).map((b) => b.stop()));
  });

  it.concurrent(
    'becomes ready from expBootstrap while the upstream is unreachable, sending the Authorization header',
    async () => {
      const bootstrap = await bootstrapSource();
      const app = track(
        createApp(
          {
            ...base(),
            flagsUrl: unreachable,
            expBootstrap: { url: bootstrap.url, urlHeaders: { Authorization: BOOTSTRAP_AUTH } },
          },
          {},
        ),
      );
      await request(app).get('/proxy/health').expect(503);
      await app.whenReady();
      expect(bootstrap.requests.at(-1)?.authorization).toBe(BOOTSTRAP_AUTH);
      await request(app).get('/proxy/health').expect(200);
      const res = await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
      expect(names(res.body)).toEqual(['from-bootstrap']);
      await upstreamFailed(app);
      expect(app.features.isReady()).toBe(true);
    },
  );

  it.concurrent(
    'takes the bootstrap URL and Authorization from EXP_BOOTSTRAP_URL and EXP_BOOTSTRAP_AUTHORIZATION',
    async () => {
      const bootstrap = await bootstrapSource();
      const app = track(
        createApp(
          { ...base(), flagsUrl: unreachable },
          { EXP_BOOTSTRAP_URL: bootstrap.url, EXP_BOOTSTRAP_AUTHORIZATION: BOOTSTRAP_AUTH },
        ),
      );
      await app.whenReady();
      expect(bootstrap.requests.at(-1)?.authorization).toBe(BOOTSTRAP_AUTH);
      const res = await request(app).post('/proxy').set('authorization', CLIENT_KEY).send({}).expect(200);
      expect(names(res.body)).toEqual(['from-bootstrap']);
      await upstreamFailed(app);
    },
  );

  it.concurrent(
    'stays not ready when the bootstrap source refuses the request and the upstream is down',
    async () => {
      const bootstrap = await bootstrapSource();
      const app = track(
        createApp(
          {
            ...base(),
            flagsUrl: unreachable,
            expBootstrap: { url: bootstrap.url, urlHeaders: { Authorization: 'wrong' } },
          },
          {},
        ),
      );
      await upstreamFailed(app);
      await waitFor(() => bootstrap.requests.some((h) => h.authorization === 'wrong'));
      expect(app.features.isReady()).toBe(false);
      await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(503);
    },
  );

  it.concurrent('replaces bootstrapped definitions with the upstream’s once it answers', async () => {
    const bootstrap = await bootstrapSource();
    const upstream = await new TestUpstream(definitions('from-upstream')).start();
    let app: ProxyApp | undefined;
    try {
      app = track(
        proxyFor(upstream, {
          expBootstrap: { url: bootstrap.url, urlHeaders: { Authorization: BOOTSTRAP_AUTH } },
        }),
      );
      const ready = app;
      await ready.whenReady();
      await waitFor(() => upstream.featureRequests().length > 0);
      await waitFor(async () => {
        const res = await request(ready).get('/proxy').set('authorization', CLIENT_KEY);
        return names(res.body).join() === 'from-upstream';
      });
    } finally {
      await closeNow(app);
      await upstream.stop();
    }
  });

  it.concurrent(
    'becomes ready from a storage provider given in code while the upstream is unreachable',
    async () => {
      const storage = new MapStorage();
      storage.data.set('stored-app', definitions('from-storage') as ClientFeaturesResponse);
      const app = track(
        createApp(
          { ...base(), flagsUrl: unreachable, flagsAppName: 'stored-app', storageProvider: storage },
          {},
        ),
      );
      await app.whenReady();
      expect(storage.gets).toContain('stored-app');
      const res = await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
      expect(names(res.body)).toEqual(['from-storage']);
      await upstreamFailed(app);
    },
  );

  it.concurrent('writes the upstream’s definitions to the storage provider', async () => {
    const upstream = await new TestUpstream(definitions('saved')).start();
    const storage = new MapStorage();
    let app: ProxyApp | undefined;
    try {
      app = track(proxyFor(upstream, { flagsAppName: 'saving-app', storageProvider: storage }));
      await app.whenReady();
      await waitFor(() => storage.data.has('saving-app'));
      expect(
        storage.data
          .get('saving-app')
          ?.features.map((f) => f.name)
          .sort(),
      ).toEqual(['saved', 'saved-off']);
    } finally {
      await closeNow(app);
      await upstream.stop();
    }
  });

  it.concurrent(
    'without bootstrap or storage, an unreachable upstream keeps the proxy not ready',
    async () => {
      const app = track(createApp({ ...base(), flagsUrl: unreachable }, {}));
      await upstreamFailed(app);
      expect(app.features.isReady()).toBe(false);
      await request(app).get('/proxy/health').expect(503);
    },
  );
});

describe('the size limit of a bootstrap source', () => {
  const apps: ProxyApp[] = [];
  let unreachable: string;
  let big: Server;
  let bigUrl: string;
  let dir: string;
  /** Definitions of about 20 KB: far above the 1,000-byte limit the tests set. */
  const large = definitions(`large-${'x'.repeat(20_000)}`);

  beforeAll(async () => {
    unreachable = await closedPortUrl();
    dir = mkdtempSync(path.join(tmpdir(), 'flags-bootstrap-'));
    // `/sized` declares its length; `/chunked` does not, so only counting the body can stop it.
    big = http.createServer((req, res) => {
      const body = JSON.stringify(large);
      if (req.url === '/sized')
        return void res
          .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
          .end(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < body.length; i += 1000) res.write(body.slice(i, i + 1000));
      res.end();
    });
    await new Promise<void>((resolve) => big.listen(0, '127.0.0.1', resolve));
    bigUrl = `http://127.0.0.1:${(big.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    big.closeAllConnections();
    await new Promise<void>((resolve) => big.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  async function ignored(expBootstrap: { url?: string; filePath?: string }): Promise<string> {
    const logger = capturingLogger();
    const app = createApp(
      {
        flagsUrl: unreachable,
        flagsApiToken: 'upstream-token',
        clientKeys: [CLIENT_KEY],
        refreshInterval: 60_000,
        metricsInterval: 0,
        logger,
        expBootstrap,
      },
      { FLAGS_MAX_STORED_DEFINITIONS_BYTES: '1000' },
    );
    apps.push(app);
    await waitFor(() => logger.lines.some((l) => l.msg.includes('unable to load bootstrap')), 15_000);
    await waitFor(() => app.features.stats.fetchErrors > 0, 15_000);
    expect(app.features.isReady()).toBe(false);
    await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(503);
    const line = logger.lines.find((l) => l.msg.includes('unable to load bootstrap'));
    expect(line?.level).toBe('warn');
    return line?.msg ?? '';
  }

  it.concurrent(
    'ignores, with a warning naming the limit, a bootstrap URL whose answer declares more bytes than the limit',
    async () => {
      const msg = await ignored({ url: `${bigUrl}/sized` });
      expect(msg).toMatch(
        /is \d+ bytes, above maxStoredDefinitionsBytes \(FLAGS_MAX_STORED_DEFINITIONS_BYTES\) = 1000/,
      );
    },
  );

  it.concurrent(
    'stops reading a bootstrap URL whose answer grows past the limit without declaring its length',
    async () => {
      const msg = await ignored({ url: `${bigUrl}/chunked` });
      expect(msg).toContain('is more than 1000 bytes, above maxStoredDefinitionsBytes');
    },
  );

  it.concurrent('ignores a bootstrap file larger than the limit without reading it', async () => {
    const filePath = path.join(dir, 'large.json');
    writeFileSync(filePath, JSON.stringify(large));
    const msg = await ignored({ filePath });
    expect(msg).toMatch(/the bootstrap file is \d+ bytes, above maxStoredDefinitionsBytes/);
  });

  it.concurrent.each([
    [
      'a FIFO with no writer',
      'fifo',
      /the bootstrap file is a FIFO \(named pipe\), not a regular file; ignoring it/,
    ],
    [
      'a link to /dev/zero',
      'zero',
      /the bootstrap file is a character device, not a regular file; ignoring it/,
    ],
  ])(
    'refuses %s on its handle without reading it, and keeps waiting for the upstream',
    async (_what, kind, refusal) => {
      const filePath = path.join(dir, `${kind}.json`);
      if (kind === 'fifo') execFileSync('mkfifo', [filePath]);
      else symlinkSync('/dev/zero', filePath);
      const msg = await ignored({ filePath });
      expect(msg).toMatch(refusal);
    },
  );

  it.concurrent('still becomes ready from a bootstrap file within the limit', async () => {
    const filePath = path.join(dir, 'small.json');
    writeFileSync(filePath, JSON.stringify(definitions('small')));
    const app = createApp(
      {
        flagsUrl: unreachable,
        flagsApiToken: 'upstream-token',
        clientKeys: [CLIENT_KEY],
        refreshInterval: 60_000,
        metricsInterval: 0,
        logger: silentLogger,
        expBootstrap: { filePath },
      },
      { FLAGS_MAX_STORED_DEFINITIONS_BYTES: '1000' },
    );
    apps.push(app);
    await app.whenReady();
    const res = await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
    expect(names(res.body)).toEqual(['small']);
    await waitFor(() => app.features.stats.fetchErrors > 0, 15_000);
  });
});
