import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { LoopbackServers } from '../../support/listen';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

interface Report {
  bucket: { toggles: Record<string, { yes: number; no: number }> };
}

describe("the proxy's own usage reports", () => {
  const servers = new LoopbackServers();
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await servers.closeAll();
    for (const c of cleanups.splice(0)) await c();
  });

  test.each([400, 401, 403, 413])(
    'a report refused with %i is dropped and counted, and the next interval reports again',
    async (status) => {
      const upstream = await new TestUpstream(sampleFeatures()).start();
      let refusals = 0;
      // the first report is refused, every later one accepted
      upstream.usageStatus = (path) => {
        if (path !== '/api/client/metrics' || refusals > 0) return undefined;
        refusals += 1;
        return status;
      };
      const logger = capturingLogger();
      const app: ProxyApp = await readyProxyFor(upstream, { metricsInterval: 150, logger });
      cleanups.push(async () => {
        await app.close();
        await upstream.stop();
      });
      const url = await servers.listen(app);
      const evaluate = () => fetch(`${url}/proxy?userId=u1`, { headers: { authorization: CLIENT_KEY } });

      await evaluate();
      await waitFor(() => upstream.posted('/api/client/metrics').length >= 1, 5000);
      await evaluate();
      await evaluate();
      // the refused report's count is not sent again: the later reports hold the two later requests
      const later = () =>
        upstream
          .posted('/api/client/metrics')
          .slice(1)
          .reduce((sum, r) => sum + ((r.body as Report).bucket.toggles['always-on']?.yes ?? 0), 0);
      await waitFor(() => later() >= 2, 5000);
      // three more intervals: a refused count put back (as the SDK does) would show up by then
      await new Promise((resolve) => setTimeout(resolve, 450));
      expect(later()).toBe(2);
      expect(app.features.stats.usageReportsRefused).toBe(1);
      expect(
        logger.lines.some((l) => l.level === 'warn' && /refused the proxy's usage report/.test(l.msg)),
      ).toBe(true);
      const scrape = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(await scrape.text()).toMatch(/^flags_proxy_usage_reports_refused_total 1$/m);
    },
  );

  test('closing waits for a report still on its way: every count has reached the upstream when close resolves', async () => {
    const upstream = await new TestUpstream(sampleFeatures()).start();
    // the first report is answered late, after the close's own report
    let first = true;
    upstream.usageDelay = (path) => {
      if (path !== '/api/client/metrics' || !first) return undefined;
      first = false;
      return 800;
    };
    const app: ProxyApp = await readyProxyFor(upstream, { metricsInterval: 100 });
    cleanups.push(async () => {
      await upstream.stop();
    });
    const url = await servers.listen(app);
    const evaluate = () => fetch(`${url}/proxy?userId=u1`, { headers: { authorization: CLIENT_KEY } });
    await evaluate();
    // the timer's report (with that count) is on its way and not answered yet
    await waitFor(() => upstream.posted('/api/client/metrics').length >= 1, 5000);
    expect(upstream.metricsAnswered).toBe(0);
    await evaluate();
    await app.close();
    // both reports answered: the late one too, before close resolved
    expect(upstream.metricsAnswered).toBe(upstream.posted('/api/client/metrics').length);
    const counted = upstream
      .posted('/api/client/metrics')
      .reduce((sum, r) => sum + ((r.body as Report).bucket.toggles['always-on']?.yes ?? 0), 0);
    expect(counted).toBe(2);
  });

  test('a report that fails with a 503 keeps its counts for the next report', async () => {
    const upstream = await new TestUpstream(sampleFeatures()).start();
    let failures = 0;
    upstream.usageStatus = (path) => {
      if (path !== '/api/client/metrics' || failures > 0) return undefined;
      failures += 1;
      return 503;
    };
    const app: ProxyApp = await readyProxyFor(upstream, { metricsInterval: 100 });
    cleanups.push(async () => {
      await app.close();
      await upstream.stop();
    });
    const url = await servers.listen(app);
    await fetch(`${url}/proxy?userId=u1`, { headers: { authorization: CLIENT_KEY } });
    await waitFor(() => upstream.posted('/api/client/metrics').length >= 2, 5000);
    const reports = upstream.posted('/api/client/metrics').map((r) => r.body as Report);
    // the failed report's count comes again in the next one
    expect(reports[0].bucket.toggles['always-on']).toMatchObject({ yes: 1 });
    expect(reports[1].bucket.toggles['always-on']).toMatchObject({ yes: 1 });
    expect(app.features.stats.usageReportsRefused).toBe(0);
  });
});
