/**
 * Two builds of the proxy side by side, to measure one change against the commit before it on a
 * shared host, where two bench runs minutes apart differ by more than most changes.
 *
 * `node dist/bench/interleaved.js <other worktree> [get|ids|post|ofrep|kept|wrongkey|health] [flags] [rounds] [burst]`:
 * the other worktree (e.g. the commit before, `git worktree add ../base <commit>`, built there) and
 * this one each start a proxy (`dist/src/bin/flags-proxy.js`) on the bench's generated
 * definitions; bursts of requests then alternate between the two (16 connections each, the order
 * swapped every round), and each burst's server CPU is read from `/proc/<pid>/task/*\/schedstat`
 * (every thread of the process). Printed: each build's median µs per request and the median of
 * the rounds' ratios (this build / the other). The kinds of request: `get` a new user's GET with
 * the bench's properties, `ids` one with only userId and sessionId, `post` a new user's POST,
 * `ofrep` a new targetingKey's OFREP bulk, `kept` one repeated context, `wrongkey` the same with a
 * wrong client key (401), `health` the cold route `GET /proxy/health`.
 *
 * With `ceiling` in place of the other worktree, the other server is the bench's bare `node:http`
 * ceiling (`ceiling.ts`) answering this proxy's own response (status, headers, body of one sample
 * request of the kind): the ratio is then the proxy's server CPU per request over what Node itself
 * costs for the same bytes, as this harness's client (Node's own, slower than the servers) reads
 * it; the µs targets are read with `wrk` (`wrk-cells.ts`).
 */
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { startCeiling } from './ceiling-process';
import { definitionsUpstream } from './definitions-upstream';
import { NEW_USER_QUERY } from './flags';
import { freePort } from './free-port';
import { cpuNanos } from './process-cpu';
import { spawnProxy } from './proxy-process';

const [other, kind = 'get', flagsArg = '200', roundsArg = '10', burstArg = '1000'] = process.argv.slice(2);
const FLAGS = Number(flagsArg);
const ROUNDS = Number(roundsArg);
const BURST = Number(burstArg);
const CONNECTIONS = 16;
const KEY = 'interleaved-key';
const QUERY = NEW_USER_QUERY;
const PROPERTIES = { plan: 'pro', version: '2.3.1', region: 'eu', age: '31', email: 'ada@example.com' };

interface Build {
  readonly root: string;
  readonly port: number;
  readonly child: ChildProcess;
  readonly agent: http.Agent;
  readonly perRequest: number[];
}

let user = 0;

/** The next request of the chosen kind: method, path and body. */
function next(): [string, string, string | undefined] {
  user += 1;
  const id = `u-${user}`;
  switch (kind) {
    case 'ids':
      return ['GET', `/proxy?userId=${id}&sessionId=s-${user}`, undefined];
    case 'kept':
    case 'wrongkey':
      return ['GET', `/proxy?${QUERY}&userId=user-42&sessionId=sess-42`, undefined];
    case 'health':
      return ['GET', '/proxy/health', undefined];
    case 'post':
      return [
        'POST',
        '/proxy',
        JSON.stringify({
          context: {
            appName: 'web',
            environment: 'production',
            userId: id,
            sessionId: `s-${user}`,
            properties: PROPERTIES,
          },
        }),
      ];
    case 'ofrep':
      return [
        'POST',
        '/ofrep/v1/evaluate/flags',
        JSON.stringify({ context: { targetingKey: id, appName: 'web', ...PROPERTIES } }),
      ];
    default:
      return ['GET', `/proxy?${QUERY}&userId=${id}&sessionId=s-${user}`, undefined];
  }
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

function exchange(
  build: Build,
  method: string,
  urlPath: string,
  body?: string,
  keep = false,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: kind === 'wrongkey' ? 'not-the-key' : KEY };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const req = http.request(
      { agent: build.agent, host: '127.0.0.1', port: build.port, method, path: urlPath, headers },
      (res) => {
        const chunks: Buffer[] = [];
        if (keep) res.on('data', (chunk: Buffer) => chunks.push(chunk));
        else res.resume();
        res.on('end', () => {
          const answer: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers))
            if (typeof value === 'string') answer[name] = value;
          resolve({ status: res.statusCode ?? 0, headers: answer, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const send = (build: Build, method: string, urlPath: string, body?: string): Promise<number> =>
  exchange(build, method, urlPath, body).then((answer) => answer.status);

async function burst(build: Build, count: number): Promise<void> {
  let left = count;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (left-- > 0) {
        const [method, urlPath, body] = next();
        const status = await send(build, method, urlPath, body);
        if (status !== (kind === 'wrongkey' ? 401 : 200))
          throw new Error(`${build.root}: ${method} ${urlPath} answered ${status}`);
      }
    }),
  );
}

async function start(root: string, upstream: number, port: number): Promise<Build> {
  const child = spawnProxy(root, upstream, port, KEY);
  const build: Build = {
    root,
    port,
    child,
    agent: new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }),
    perRequest: [],
  };
  const until = Date.now() + 30_000;
  for (;;) {
    const ok = await send(build, 'GET', '/proxy/health').then(
      (status) => status === 200,
      () => false,
    );
    if (ok) return build;
    if (Date.now() > until) throw new Error(`${root}: no ready proxy in 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The bench's ceiling, answering `answer` to every request. */
async function ceilingBuild(answer: Answer): Promise<Build> {
  const { child, port } = await startCeiling(answer);
  return {
    root: 'ceiling',
    port,
    child,
    agent: new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS }),
    perRequest: [],
  };
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  if (other === undefined)
    throw new Error('usage: interleaved.js <other worktree|ceiling> [kind] [flags] [rounds] [burst]');
  const upstream = await definitionsUpstream(FLAGS);
  const upstreamPort = upstream.port;
  const builds: Build[] = [];
  process.once('exit', () => {
    for (const build of builds) build.child.kill('SIGKILL');
  });
  const own = await start(path.resolve(__dirname, '..', '..'), upstreamPort, await freePort());
  builds.push(own);
  if (other === 'ceiling') {
    const [method, urlPath, body] = next();
    builds.unshift(await ceilingBuild(await exchange(own, method, urlPath, body, true)));
  } else builds.unshift(await start(path.resolve(other), upstreamPort, await freePort()));
  // warm-up: compilation, memo rows, templates
  for (const build of builds) await burst(build, 2 * BURST);
  for (let round = 0; round < ROUNDS; round++) {
    for (const build of round % 2 === 0 ? builds : [...builds].reverse()) {
      const before = cpuNanos(build.child.pid ?? 0);
      await burst(build, BURST);
      build.perRequest.push((cpuNanos(build.child.pid ?? 0) - before) / BURST / 1000);
    }
  }
  const [base, current] = builds;
  const ratios = current.perRequest.map((us, i) => us / base.perRequest[i]);
  console.log(
    `${kind}, ${FLAGS} flags: ${base.root} ${median(base.perRequest).toFixed(1)} µs, ` +
      `${current.root} ${median(current.perRequest).toFixed(1)} µs per request; ` +
      `ratio ${median(ratios).toFixed(3)} (rounds: ${ratios.map((r) => r.toFixed(2)).join(' ')})`,
  );
  upstream.close();
  process.exit(0);
}

void main();
