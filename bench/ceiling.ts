/**
 * The ceiling: a bare `node:http` server that answers every request with the proxy's own response
 * bytes (status, headers, body) for the scenario being measured. Run in its own process by run.ts;
 * `PUT /__ceiling` with `{status, headers, body}` sets the answer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

let answer: Answer = { status: 200, headers: {}, body: Buffer.alloc(0) };

const server = http.createServer((req, res) => {
  if (req.method === 'PUT' && req.url === '/__ceiling') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const next = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        status: number;
        headers: Record<string, string>;
        body: string;
      };
      answer = { status: next.status, headers: next.headers, body: Buffer.from(next.body, 'base64') };
      res.writeHead(204).end();
    });
    return;
  }
  req.resume();
  req.on('end', () => {
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
});

server.listen(0, '127.0.0.1', () => {
  process.send?.({ port: (server.address() as AddressInfo).port });
});
process.on('disconnect', () => process.exit(0));
