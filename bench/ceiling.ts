/**
 * The ceiling: a bare `node:http` server that answers every request with the proxy's own response
 * bytes (status, headers, body) for the scenario being measured. Run in its own process by run.ts;
 * `PUT /__ceiling` with `{status, headers, body}` sets the answer. With BENCH_CEILING_WORKERS=N (N > 1)
 * it runs as N `node:cluster` workers on one port, as the proxy does with FLAGS_WORKERS; a PUT reaches
 * one worker, which has the primary hand the answer to every worker.
 */
import cluster from 'node:cluster';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

let answer: Answer = { status: 200, headers: {}, body: Buffer.alloc(0) };

interface SentAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const setAnswer = (next: SentAnswer) => {
  answer = { status: next.status, headers: next.headers, body: Buffer.from(next.body, 'base64') };
};
const WORKERS = Number(process.env.BENCH_CEILING_WORKERS ?? 1);
const clustered = WORKERS > 1;

if (clustered && cluster.isPrimary) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  let reported = false;
  cluster.on('message', (from, m: { port?: number; answer?: SentAnswer }) => {
    if (m.port !== undefined && !reported) {
      reported = true;
      process.send?.({ port: m.port });
    }
    if (m.answer) {
      for (const w of Object.values(cluster.workers ?? {})) w?.send({ answer: m.answer });
      from.send({ ack: true });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

const server = http.createServer((req, res) => {
  if (req.method === 'PUT' && req.url === '/__ceiling') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const next = JSON.parse(Buffer.concat(chunks).toString('utf8')) as SentAnswer;
      if (!clustered) {
        setAnswer(next);
        res.writeHead(204).end();
        return;
      }
      process.once('message', () => res.writeHead(204).end());
      process.send?.({ answer: next });
    });
    return;
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
});

if (clustered && cluster.isWorker) {
  process.on('message', (m: { answer?: SentAnswer }) => {
    if (m.answer) setAnswer(m.answer);
  });
}
if (!clustered || cluster.isWorker) {
  // In a cluster every worker listening on port 0 shares one port.
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ port: (server.address() as AddressInfo).port });
  });
  process.on('disconnect', () => process.exit(0));
  // exits normally, so that a `--cpu-prof` (BENCH_CEILING_NODE_ARGS) is written
  process.on('SIGTERM', () => process.exit(0));
}
