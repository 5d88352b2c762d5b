/**
 * Series that describe the first upstream token's environment without saying so (the
 * specification's unlabelled series, and the first environment's backup): hidden from keys of
 * other environments.
 */
export const FIRST_ENVIRONMENT_SERIES: readonly string[] = [
  'last_metrics_update_epoch_timestamp_ms',
  'last_metrics_fetch_epoch_timestamp_ms',
  'flags_proxy_ready',
  'flags_proxy_toggles',
  'flags_proxy_upstream_fetch_errors_total',
  'flags_proxy_upstream_definitions_refused_total',
  'flags_proxy_toggles_quarantined',
  'flags_proxy_usage_reports_refused_total',
  'flags_proxy_backup_errors_total',
  'flags_proxy_backup_age_seconds',
  'flags_proxy_backup_in_use',
];

const ENVIRONMENT_LABEL = /[{,]environment="((?:[^"\\]|\\.)*)"/;
const SAMPLE_SUFFIXES = ['_bucket', '_sum', '_count'];

/** A label value as the exposition format writes it. */
function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** The metric a line of the exposition belongs to (its HELP/TYPE name, or its sample's name). */
function metricOf(line: string): string {
  if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) return line.slice(7).split(' ', 1)[0];
  const end = line.search(/[{ ]/);
  return end < 0 ? line : line.slice(0, end);
}

/**
 * What a scrape with a key of one environment is shown: every process-wide series; of the series
 * labelled `environment`, only the samples of its own (`own`, the label value); and the unlabelled
 * series of the first environment only when it is that one (`first`).
 */
export function environmentScrape(own: string, first: boolean): (text: string) => string {
  const ownValue = escapeLabelValue(own);
  const hidden = new Set(first ? [] : FIRST_ENVIRONMENT_SERIES);
  const isHidden = (metric: string): boolean =>
    hidden.has(metric) ||
    SAMPLE_SUFFIXES.some((s) => metric.endsWith(s) && hidden.has(metric.slice(0, -s.length)));
  return (text) =>
    text
      .split('\n')
      .filter((line) => {
        if (line === '') return true;
        if (isHidden(metricOf(line))) return false;
        if (line.startsWith('#')) return true;
        const label = ENVIRONMENT_LABEL.exec(line);
        return label === null || label[1] === ownValue;
      })
      .join('\n');
}
