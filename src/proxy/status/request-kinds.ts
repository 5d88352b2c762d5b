import { UNMATCHED_ROUTE } from '../prometheus/request-metrics';

/** The kinds of request the status page plots, in the order it lists them. A fixed set: no route mints one. */
export const REQUEST_KINDS = [
  'frontend API',
  'OFREP',
  'client API',
  'usage',
  'change streams',
  'backstage',
  'refused or unknown',
  'other',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** Status classes the page plots; 304 apart (the share answered 304 is one of its plots). */
export const STATUS_CLASSES = ['2xx', '304', '3xx', '4xx', '5xx'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** The kind of a request series' route template (the base path included). */
export function requestKind(route: string): RequestKind {
  if (route === UNMATCHED_ROUTE) return 'refused or unknown';
  if (route.includes('/internal-backstage') || route.endsWith('/health')) return 'backstage';
  if (/\/client\/(metrics|register)|\/metrics\/bulk/.test(route)) return 'usage';
  if (route.includes('/flag-changes') || route.includes('/stream')) return 'change streams';
  if (route.includes('/client/features') || route.includes('/api/client')) return 'client API';
  if (route.includes('/ofrep')) return 'OFREP';
  if (route.includes('/proxy') || route.includes('/api/frontend')) return 'frontend API';
  return 'other';
}

export function statusClass(status: string): StatusClass {
  if (status === '304') return '304';
  const first = status[0];
  if (first === '2') return '2xx';
  if (first === '3') return '3xx';
  if (first === '4') return '4xx';
  return '5xx';
}
