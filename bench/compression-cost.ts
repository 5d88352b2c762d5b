/**
 * What compressing a new user's answer costs, in process: the proxy's `/proxy` answer (every
 * enabled toggle, a new user, the bench's query properties) for the bench's generated definitions,
 * compressed with each candidate encoder (Brotli qualities 0–2, gzip level 1), interleaved rounds.
 * Prints µs per answer and per KB (median of the rounds) and the ratio (original ÷ compressed).
 * `node dist/bench/compression-cost.js [flags...]`, default 200 and 2000.
 */
import zlib from 'node:zlib';
import { silentLogger } from '../src/common/logging/logger';
import { Evaluator } from '../src/proxy/engine/evaluator';
import { inProcessProxy } from './in-process';

const SIZES = process.argv.slice(2).map(Number);
const ROUNDS = 15;

const brotli = (quality: number) => (body: Buffer) =>
  zlib.brotliCompressSync(body, {
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
    },
  });

const ENCODERS: [string, (body: Buffer) => Buffer][] = [
  ['Brotli quality 0', brotli(0)],
  ['Brotli quality 1', brotli(1)],
  ['Brotli quality 2', brotli(2)],
  ['gzip level 1', (body) => zlib.gzipSync(body, { level: 1 })],
];

async function answerOf(flags: number): Promise<Buffer> {
  const { app, close } = await inProcessProxy(flags, 'compression-cost');
  const evaluator = new Evaluator(app.features, silentLogger);
  const reply = evaluator.reply(
    { kind: 'enabled' },
    {
      userId: 'u-sample',
      sessionId: 's-sample',
      appName: 'web',
      environment: 'production',
      properties: { plan: 'pro', version: '2.3.1', region: 'eu', age: '31', email: 'ada@example.com' },
    },
    undefined,
  );
  if (reply.notModified) throw new Error('no body');
  const body = Buffer.from(reply.body);
  reply.release?.();
  await close();
  return body;
}

async function main(): Promise<void> {
  console.log('| flags | answer | encoder | µs per answer | µs per KB | compressed | ratio |');
  console.log('|---:|---:|---|---:|---:|---:|---:|');
  for (const flags of SIZES.length > 0 ? SIZES : [200, 2000]) {
    const body = await answerOf(flags);
    const times = new Map<string, number[]>(ENCODERS.map(([name]) => [name, []]));
    const repeat = Math.max(5, Math.round(2_000_000 / body.length));
    for (const [, encode] of ENCODERS) for (let i = 0; i < repeat; i++) encode(body); // warm-up
    for (let round = 0; round < ROUNDS; round++)
      for (const [name, encode] of ENCODERS) {
        const cpu = process.cpuUsage();
        for (let i = 0; i < repeat; i++) encode(body);
        const used = process.cpuUsage(cpu);
        times.get(name)?.push((used.user + used.system) / repeat);
      }
    for (const [name, encode] of ENCODERS) {
      const sorted = [...(times.get(name) ?? [])].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)];
      const size = encode(body).length;
      console.log(
        `| ${flags} | ${body.length} B | ${name} | ${median.toFixed(1)} | ${(median / (body.length / 1024)).toFixed(2)} | ${size} B | ${(body.length / size).toFixed(1)} |`,
      );
    }
  }
}

void main();
