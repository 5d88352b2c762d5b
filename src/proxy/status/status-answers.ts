import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Response } from 'express';
import { packageRoot } from '../../common/files/package-root';
import { cachedRender } from '../prometheus/cached-render';
import { statusReport, type StatusSources } from './status-report';

/** Only its own origin: no inline script or style, nothing from elsewhere, not framed. */
export const STATUS_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** How long a rendered status.json answers further requests: a flood of page loads costs one rendering per second. */
const JSON_CACHE_MS = 1_000;

interface Asset {
  file: () => string;
  type: string;
}

const pageFile = (name: string) => () => path.join(packageRoot(), 'src', 'proxy', 'status', 'page', name);
const uplotFile = (name: string) => () => require.resolve(`uplot/dist/${name}`);

/** The page's files, each read once when first asked; fixed names, nothing taken from the request. */
const ASSETS: Record<string, Asset> = {
  'status.js': { file: pageFile('status.js'), type: 'text/javascript; charset=utf-8' },
  'status.css': { file: pageFile('status.css'), type: 'text/css; charset=utf-8' },
  'icon.svg': { file: pageFile('icon.svg'), type: 'image/svg+xml' },
  'uplot.js': { file: uplotFile('uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uplot.css': { file: uplotFile('uPlot.min.css'), type: 'text/css; charset=utf-8' },
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function secured(res: Response): Response {
  return res
    .setHeader('Content-Security-Policy', STATUS_CSP)
    .setHeader('X-Content-Type-Options', 'nosniff')
    .setHeader('Referrer-Policy', 'no-referrer')
    .setHeader('X-Frame-Options', 'DENY');
}

/**
 * The answers of `{base}/internal-backstage/status` (the page), `status.json` (its data: one rendering per second
 * at most, whoever asks) and `status/<asset>` (its script and style, and uPlot's, from this
 * package). No parameter is read; the page polls the JSON and draws it with textContent only.
 */
export function statusAnswers(
  sources: StatusSources,
  backstagePath: string,
): Array<{ path: string; serve: (req: unknown, res: Response) => void | Promise<void> }> {
  const answers: Array<{ path: string; serve: (req: unknown, res: Response) => void | Promise<void> }> = [];
  const startedAt = Date.now() - Math.round(process.uptime() * 1000);
  const render = cachedRender(
    () => Promise.resolve(JSON.stringify(statusReport(sources, startedAt))),
    JSON_CACHE_MS,
  );
  const cache = new Map<string, Buffer>();
  const read = (key: string, load: () => Buffer): Buffer => {
    let found = cache.get(key);
    if (!found) {
      found = load();
      cache.set(key, found);
    }
    return found;
  };
  const base = escapeHtml(backstagePath);
  answers.push({
    path: '/status',
    serve: (_req, res) => {
      const html = read('page', () =>
        Buffer.from(readFileSync(pageFile('index.html')(), 'utf8').replaceAll('{{backstage}}', base)),
      );
      secured(res).setHeader('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(html);
    },
  });
  answers.push({
    path: '/status.json',
    serve: async (_req, res) => {
      const text = await render();
      secured(res).setHeader('Cache-Control', 'no-store').type('application/json; charset=utf-8').send(text);
    },
  });
  for (const [name, asset] of Object.entries(ASSETS)) {
    answers.push({
      path: `/status/${name}`,
      serve: (_req, res) => {
        const body = read(name, () => readFileSync(asset.file()));
        secured(res).setHeader('Cache-Control', 'max-age=300').type(asset.type).send(body);
      },
    });
  }
  return answers;
}
