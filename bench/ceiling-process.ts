import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';

/** A response the ceiling replays: status, headers and body. */
export interface CeilingAnswer {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/**
 * The bench's ceiling (`ceiling.ts`, a bare `node:http` server) in a child process of its own,
 * answering `answer` to every request once this resolves.
 */
export async function startCeiling(answer: CeilingAnswer): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(path.join(__dirname, 'ceiling.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  const set = JSON.stringify({
    status: answer.status,
    headers: answer.headers,
    body: answer.body.toString('base64'),
  });
  const status = await new Promise<number>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'PUT', path: '/__ceiling', agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(set);
  });
  if (status !== 204) throw new Error(`the ceiling answered ${status} to its answer`);
  return { child, port };
}
