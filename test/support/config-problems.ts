import { ConfigError } from '../../src/common/config/resolve';

/** The problems of the ConfigError `fn` throws; fails the test when it throws nothing or something else. */
export function configProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}
