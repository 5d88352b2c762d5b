import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeReply } from '../../../src/proxy/http/write-reply';
import type { Reply } from '../../../src/proxy/engine/evaluator';

/** One request to a server whose only handler is `handle`, over a real socket: status and raw headers. */
async function answerOf(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<{ status: number; headers: string[] }> {
  const server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.rawHeaders }));
        })
        .on('error', reject);
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

const valuesOf = (headers: string[], name: string): string[] =>
  headers.flatMap((value, i) => (i % 2 === 1 && headers[i - 1].toLowerCase() === name ? [value] : []));

const BODY: Reply = { notModified: false, body: Buffer.from('{"toggles":[]}'), etag: 'W/"d-x"' };
const NOT_MODIFIED: Reply = { notModified: true, etag: 'W/"d-x"' };
const CORS = ['Access-Control-Allow-Origin', 'https://app.example', 'Vary', 'Origin'];

describe('writeReply', () => {
  test.each([
    ['200', BODY, 200],
    ['304', NOT_MODIFIED, 304],
  ])(
    'a %s from a remembered CORS list is one head: the list, Vary merged, Cache-Control and ETag',
    async (_, reply, status) => {
      const answer = await answerOf((req, res) => writeReply(req, res, reply, 'Authorization', CORS));
      expect(answer.status).toBe(status);
      expect(valuesOf(answer.headers, 'access-control-allow-origin')).toEqual(['https://app.example']);
      expect(valuesOf(answer.headers, 'vary')).toEqual(['Origin, Authorization']);
      expect(valuesOf(answer.headers, 'cache-control')).toEqual(['public, max-age=2']);
      expect(valuesOf(answer.headers, 'etag')).toEqual(['W/"d-x"']);
    },
  );

  test.each([
    ['200', BODY, 200],
    ['304', NOT_MODIFIED, 304],
  ])(
    'a %s after the CORS middleware named Vary on the response keeps its fields',
    async (_, reply, status) => {
      const answer = await answerOf((req, res) => {
        res.setHeader('Access-Control-Allow-Origin', 'https://app.example');
        res.setHeader('Vary', 'Origin');
        writeReply(req, res, reply, 'Authorization', []);
      });
      expect(answer.status).toBe(status);
      expect(valuesOf(answer.headers, 'access-control-allow-origin')).toEqual(['https://app.example']);
      expect(valuesOf(answer.headers, 'vary')).toEqual(['Origin, Authorization']);
      expect(valuesOf(answer.headers, 'etag')).toEqual(['W/"d-x"']);
    },
  );
});
