/**
 * The status page as an operator sees it: headless Chromium (Debian's, driven by playwright-core)
 * opens `{base}/internal-backstage/status` of a proxy serving two environments on a loopback socket
 * while the test sends traffic. Without /usr/bin/chromium this suite says so and checks nothing,
 * except under `CI=true`, where it fails (as browser.test.ts).
 */
import { rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { ProxyApp } from '../../src/proxy/app';
import { sampleFeatures } from '../support/fixtures';
import { readyProxyFor, waitFor } from '../support/proxy';
import { TestUpstream } from '../support/upstream';
import { CHROMIUM, CHROMIUM_ARGS, describeWithChromium } from '../support/chromium';

const describeBrowser = describeWithChromium('status-page.test.ts');

const DEV_TOKEN = '*:development.status-page-dev-secret-5c0e913a';
const PLAIN_TOKEN = 'status-page-plain-upstream-secret-e41f';
const CLIENT_KEY = 'status-page-client-key-2a7d';
/** The second environment's name (the configured one, for the token not in Unleash's format): markup as data. */
const ODD_NAME = '<img src=x id=injected onerror="window.pwned=1">prod&amp;';
const SECRETS = [DEV_TOKEN, PLAIN_TOKEN, CLIENT_KEY, 'status-page-dev-secret-5c0e913a'];
/** The docs' screenshot is written again with UPDATE_SCREENSHOTS=true; otherwise a temporary file. */
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOTS === 'true'
    ? path.resolve(__dirname, '../../docs/images/status-page.png')
    : path.join(tmpdir(), `flags-proxy-status-page-${process.pid}.png`);

/** The value of every sample of `name` whose labels contain all of `labels`, summed. */
function metricSum(exposition: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describeBrowser('the status page in Chromium', () => {
  let upstream: TestUpstream;
  let app: ProxyApp;
  let server: http.Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    const plain = sampleFeatures();
    plain.features = plain.features.slice(0, 3);
    upstream = await new TestUpstream(sampleFeatures(), DEV_TOKEN).addToken(PLAIN_TOKEN, plain).start();
    app = await readyProxyFor(upstream, {
      flagsApiToken: `${DEV_TOKEN},${PLAIN_TOKEN}`,
      environment: ODD_NAME,
      clientKeys: [CLIENT_KEY],
      proxyBasePath: '/flags',
      // as deployed: scrapes rendered at most once a second
      prometheusCacheInterval: 1000,
    });
    server = http.createServer(app.listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    await upstream.stop();
  });

  const proxyGets = async (count: number, status = 200) => {
    for (let i = 0; i < count; i++) {
      const res = await fetch(`${origin}/flags/proxy?userId=user-${i}`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(res.status).toBe(status);
    }
  };

  /** Runs `expression` in the page (a string: this project's TypeScript has no DOM types). */
  const inPage = <T>(page: Page, expression: string) => page.evaluate<T>(expression);

  /** The count the page shows for a kind and status, or undefined while it shows none. */
  const shown = async (page: Page, kind: string, status: string): Promise<number | undefined> => {
    const text = await inPage<string | null>(
      page,
      `(() => {
        const row = Array.from(document.querySelectorAll('#totals tbody tr')).find(
          (r) => r.getAttribute('data-kind') === ${JSON.stringify(kind)} && r.getAttribute('data-status') === ${JSON.stringify(status)});
        return row ? row.querySelector('.count').textContent : null;
      })()`,
    );
    return text === null ? undefined : Number(text);
  };

  test('loads from its own origin only, names every environment as text, draws its charts, follows the traffic and agrees with /metrics', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const problems: string[] = [];
    const requested: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('request', (r) => requested.push(r.url()));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} for ${r.url()}`);
    });

    const answer = await page.goto(`${origin}/flags/internal-backstage/status`);
    expect(answer?.status()).toBe(200);
    expect(answer?.headers()['content-security-policy']).toContain("default-src 'self'");
    await page.waitForSelector('#environments [data-environment]');

    // every environment named, as text: the odd name is shown, not interpreted
    const names = await inPage<string[]>(
      page,
      `Array.from(document.querySelectorAll('#environments [data-environment] h3')).map((h) => h.textContent)`,
    );
    expect(names).toEqual(['development', ODD_NAME]);
    expect(await page.$('#injected')).toBeNull();
    expect(await inPage<unknown>(page, 'window.pwned')).toBeUndefined();

    // four charts, drawn on canvases
    await waitFor(async () => (await page.$$('.chart canvas')).length === 4, 10_000);
    const widths = await inPage<number[]>(
      page,
      `Array.from(document.querySelectorAll('.chart canvas')).map((c) => c.width)`,
    );
    expect(widths).toHaveLength(4);
    for (const width of widths) expect(width).toBeGreaterThan(0);

    // traffic: the page follows without a reload, in its totals and its plot's series
    expect(await shown(page, 'frontend API', '2xx')).toBeUndefined();
    await proxyGets(25);
    await waitFor(async () => (await shown(page, 'frontend API', '2xx')) === 25, 15_000);
    const legend = () =>
      inPage<string[]>(
        page,
        `Array.from(document.querySelectorAll('#chart-requests .u-legend .u-label')).map((l) => l.textContent)`,
      );
    await waitFor(async () => (await legend()).includes('frontend API 2xx'), 15_000);

    // no more evaluations: what the page shows is what a scrape says at the same moment
    const scrape = await (await fetch(`${origin}/flags/internal-backstage/metrics`)).text();
    expect(
      metricSum(scrape, 'flags_proxy_http_requests_total', { route: '/flags/proxy', status: '200' }),
    ).toBe(25);
    expect(await shown(page, 'frontend API', '2xx')).toBe(25);
    const definitions = await inPage<string[]>(
      page,
      `Array.from(document.querySelectorAll('#environments [data-environment]')).map((card) => {
        const dt = Array.from(card.querySelectorAll('dt')).find((d) => d.textContent === 'definitions');
        return dt ? dt.nextElementSibling.textContent : '';
      })`,
    );
    const counts = definitions.map((d) => Number(d.split(' ')[0]));
    expect(counts).toEqual([
      metricSum(scrape, 'flags_proxy_environment_toggles', { environment: 'development' }),
      metricSum(scrape, 'flags_proxy_environment_toggles', { environment: ODD_NAME.replace(/"/g, '\\"') }),
    ]);
    expect(counts).toEqual([sampleFeatures().features.length, 3]);

    // nothing from another origin, no console error (a CSP violation is one), no secret anywhere
    expect(requested.length).toBeGreaterThan(4);
    for (const url of requested) expect(new URL(url).origin).toBe(origin);
    expect(problems).toEqual([]);
    const html = await page.content();
    for (const secret of SECRETS) expect(html).not.toContain(secret);
    // the upstream token as /internal-backstage/tokens shows it
    expect(html).toContain('*:development.****');

    const picture = await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(picture.length).toBeGreaterThan(10_000);
    if (process.env.UPDATE_SCREENSHOTS !== 'true') rmSync(SCREENSHOT, { force: true });
    await page.close();
  }, 90_000);
});
