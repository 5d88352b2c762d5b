/**
 * Groups a V8 CPU profile's samples (`node --cpu-prof`, e.g. the proxy's under `npm run bench` with
 * `BENCH_PROXY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"`) into the steps of a request, from
 * the socket to the last byte, and prints them as a table.
 *
 * `node dist/bench/profile-steps.js <file.cpuprofile>[+<file>…][=µs]... [--top] [--span ms]`: one
 * column per argument (several profiles of one row joined by `+` are summed); with `=µs` (the server CPU per request the bench measured for that row without the
 * profiler, which slows every step alike) each share is also given in µs per request.
 *
 * Samples are counted in the `--span` ms (default 3000, the bench's measured run) that hold the
 * most samples parsing requests: the load, without start-up, compilation and readiness polls.
 *
 * Each sample is charged to the step of the innermost frame that names one (walking from the
 * sampled function towards the root): a `Buffer.copy` called by the join is the join's, a digest's
 * native hash is the validator's. Idle samples are left out; "busy" is everything else. `--top` lists each step's five heaviest frames, to check the grouping.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  parent?: number;
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** A step and how a frame is recognised as one: by its file (a part of its URL) or its name. */
interface Step {
  name: string;
  files?: readonly string[];
  functions?: readonly string[];
}

/** In the order of a request; the first step matching a frame is its step. */
export const STEPS: readonly Step[] = [
  { name: 'GC', functions: ['(garbage collector)'] },
  {
    name: 'compression',
    files: ['/compression/', 'node:zlib', 'node:internal/zlib'],
    functions: ['brotliCompressSync', 'gzipSync', 'zlibBufferSync', 'processChunkSync'],
  },
  {
    name: 'derived validator (canonical context + digest)',
    files: ['/context/canonical-context.', '/engine/etag.', '/engine/determinism.', '/common/http/etag.'],
  },
  {
    name: 'memo and template lookups',
    files: [
      '/engine/memo-keys.',
      '/engine/answer-templates.',
      '/engine/template-pass.',
      '/engine/connection-memo.',
      '/engine/answer-cache.',
      '/engine/evaluation-memory.',
      '/engine/body-forms.',
    ],
  },
  {
    name: 'per-toggle evaluation',
    files: [
      '/engine/answer-pass.',
      '/engine/compiled/',
      '/engine/plan.',
      '/engine/toggle-steps.',
      '/engine/outcome-table.',
      '/engine/usage-tally.',
      '/engine/details.',
      'node_modules/unleash-client/',
      '/upstream/murmur-hash.',
      'node_modules/murmurhash',
    ],
  },
  {
    name: 'the join (entries into one body)',
    files: ['/engine/answer-loop.', '/engine/toggle-json.', '/engine/body-buffers.'],
  },
  {
    name: 'engine façade (prepare, answer)',
    files: ['/engine/evaluator.', '/engine/requests.', '/engine/reference-path.', '/engine/revision.'],
  },
  {
    name: 'context build (query, enhance, copy)',
    files: [
      '/context/',
      '/evaluation/',
      '/upstream/feature-repository.',
      '/upstream/sdk/',
      'node:querystring',
      'node:internal/querystring',
      'node:url',
      'node:internal/url',
    ],
  },
  {
    name: 'key check, routing, CORS',
    files: [
      '/http/front.',
      '/http/gate.',
      '/http/route-table.',
      '/http/key-policies.',
      '/http/endpoint',
      '/auth/',
      '/access/',
      '/cors/',
      '/scopes/',
      '/token-validation/',
    ],
  },
  {
    name: 'write (headers, socket)',
    files: [
      '/http/write-reply.',
      'node:_http_outgoing',
      'node:_http_server',
      'node:net',
      'node:internal/stream_base_commons',
      'node:internal/streams/writable',
      'node:stream',
    ],
    functions: ['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String'],
  },
  {
    name: 'HTTP parse (socket read, headers)',
    files: ['node:_http_common', 'node:_http_incoming', 'node:internal/streams/readable'],
    functions: ['parserOnHeadersComplete', 'parserOnIncoming', 'execute', 'onStreamRead'],
  },
  {
    name: 'event loop, timers, ticks',
    files: ['node:internal/timers', 'node:internal/process/', 'node:events', 'node:internal/async_hooks'],
  },
  { name: 'native, unattributed ((program))', functions: ['(program)'] },
];

const OTHER = 'other (start-up, upstream, logging, …)';
const IDLE = '(idle)';

function stepOf(frame: CallFrame): string | undefined {
  for (const step of STEPS) {
    if (step.functions?.includes(frame.functionName)) return step.name;
    if (frame.url !== '' && step.files?.some((f) => frame.url.includes(f))) return step.name;
  }
  return undefined;
}

export interface Grouped {
  busyMicros: number;
  byStep: Map<string, number>;
  top: Map<string, Map<string, number>>;
}

/** Self time of every sample, charged to its step. */
export function group(profile: Profile, spanMs = 3000): Grouped {
  const nodes = new Map<number, ProfileNode>();
  for (const node of profile.nodes) nodes.set(node.id, node);
  for (const node of profile.nodes)
    for (const child of node.children ?? []) {
      const c = nodes.get(child);
      if (c) c.parent = node.id;
    }
  const memo = new Map<number, string>();
  const resolve = (id: number): string => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    let step: string | undefined;
    for (
      let at: ProfileNode | undefined = nodes.get(id);
      at;
      at = at.parent === undefined ? undefined : nodes.get(at.parent)
    ) {
      if (at.callFrame.functionName === IDLE) {
        step = IDLE;
        break;
      }
      step = stepOf(at.callFrame);
      if (step !== undefined) break;
    }
    const found = step ?? OTHER;
    memo.set(id, found);
    return found;
  };
  const byStep = new Map<string, number>();
  const top = new Map<string, Map<string, number>>();
  let busy = 0;
  // the window: the `spanMs` with the most samples parsing requests (the measured load; start-up,
  // readiness polls and the idle time around it left out)
  const parse = STEPS.find((s) => s.name.startsWith('HTTP parse'))?.name;
  const times: number[] = [];
  const steps: string[] = [];
  let at = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    times.push(at);
    steps.push(resolve(profile.samples[i]));
  }
  let from = 0;
  let best = -1;
  let inWindow = 0;
  for (let end = 0, start = 0; end < times.length; end++) {
    if (steps[end] === parse) inWindow++;
    while (times[end] - times[start] > spanMs * 1000) if (steps[start++] === parse) inWindow--;
    if (inWindow > best) {
      best = inWindow;
      from = times[start];
    }
  }
  for (let i = 0; i < profile.samples.length; i++) {
    const step = steps[i];
    const micros = profile.timeDeltas[i + 1] ?? 0; // the time until the next sample
    if (step === IDLE || times[i] < from || times[i] > from + spanMs * 1000) continue;
    busy += micros;
    byStep.set(step, (byStep.get(step) ?? 0) + micros);
    const frame = nodes.get(profile.samples[i])?.callFrame;
    const label = frame
      ? `${frame.functionName || '(anonymous)'} ${frame.url.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`
      : '?';
    const frames = top.get(step) ?? new Map<string, number>();
    frames.set(label, (frames.get(label) ?? 0) + micros);
    top.set(step, frames);
  }
  return { busyMicros: busy, byStep, top };
}

function main(): void {
  const args = process.argv.slice(2);
  const spanAt = args.indexOf('--span');
  const spanMs = spanAt >= 0 ? Number(args.splice(spanAt, 2)[1]) : 3000;
  const showTop = args.includes('--top');
  const columns = args
    .filter((a) => a !== '--top')
    .map((arg) => {
      // `a.cpuprofile+b.cpuprofile=µs`: profiles of the same row, summed; `=µs`: the server CPU per
      // request the bench measured for that row without the profiler
      const [files, perRequest] = arg.split('=');
      const paths = files.split('+');
      const label = paths[0].split('/').slice(-3, -1).join('/');
      const sum: Grouped = { busyMicros: 0, byStep: new Map(), top: new Map() };
      for (const path of paths) {
        const one = group(JSON.parse(readFileSync(path, 'utf8')) as Profile, spanMs);
        sum.busyMicros += one.busyMicros;
        for (const [step, micros] of one.byStep) sum.byStep.set(step, (sum.byStep.get(step) ?? 0) + micros);
        for (const [step, frames] of one.top) {
          const into = sum.top.get(step) ?? new Map<string, number>();
          for (const [frame, micros] of frames) into.set(frame, (into.get(frame) ?? 0) + micros);
          sum.top.set(step, into);
        }
      }
      return { label, perRequest: perRequest === undefined ? undefined : Number(perRequest), ...sum };
    });
  if (columns.length === 0) {
    console.error(
      'usage: node dist/bench/profile-steps.js <file.cpuprofile>[+<file>…][=µs per request]... [--top] [--span ms]',
    );
    process.exit(2);
  }
  const cell = (c: (typeof columns)[number], micros: number) => {
    const share = micros / c.busyMicros;
    const percent = `${(100 * share).toFixed(1)} %`;
    return c.perRequest === undefined ? percent : `${percent} (${(share * c.perRequest).toFixed(1)} µs)`;
  };
  const order = [...STEPS.map((s) => s.name), OTHER].filter((s) => columns.some((c) => c.byStep.has(s)));
  console.log(`| step | ${columns.map((c) => c.label).join(' | ')} |`);
  console.log(`|---|${columns.map(() => '---:|').join('')}`);
  for (const step of order) {
    console.log(`| ${step} | ${columns.map((c) => cell(c, c.byStep.get(step) ?? 0)).join(' | ')} |`);
    if (showTop)
      for (const c of columns)
        for (const [label, m] of [...(c.top.get(step) ?? new Map<string, number>())]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5))
          console.log(`|   ${c.label}: ${label} | ${((100 * m) / c.busyMicros).toFixed(1)} % |`);
  }
  console.log(
    `| busy in the profile (ms) | ${columns.map((c) => (c.busyMicros / 1000).toFixed(0)).join(' | ')} |`,
  );
}

if (require.main === module) main();
