import { existsSync } from 'node:fs';

/** Debian's Chromium, the real browser of the browser suites (`.ci/run` installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Headless Chromium's flags on this machine: no sandbox (root), and no background connections,
 * which the closed network refuses.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * `describe` when Chromium is installed; without it a suite says so and checks nothing, except
 * under `CI=true`, where a missing browser fails the run.
 */
export function describeWithChromium(suite: string): jest.Describe {
  const have = existsSync(CHROMIUM);
  if (!have && process.env.CI === 'true') throw new Error(`${CHROMIUM} is missing: .ci/run installs it`);
  if (!have) console.warn(`${suite}: ${CHROMIUM} is not installed; the real-browser checks do not run`);
  // an explained skip: the browser is not on this machine (never under CI)
  return have ? describe : describe.skip;
}
