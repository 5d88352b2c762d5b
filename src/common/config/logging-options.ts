import * as p from './parsers';
import type { OptionSpec } from './resolve';
import { LOG_LEVELS, type LogLevel } from '../logging/logger';

/** Passes a code-only value (an object or function) through untouched. */
export const passThrough: p.Parser<unknown> = (v) => v;

/** The logging options both programs share: a custom logger, JSON lines, and the level. */
export function loggingOptions(defaultLevel: LogLevel): OptionSpec[] {
  return [
    {
      key: 'logger',
      env: [],
      parse: passThrough,
      codeOnly: true,
      defaultDoc: '(simple logger)',
      doc: 'Custom logger object with debug/info/warn/error/fatal methods (code only)',
    },
    {
      key: 'useJsonLogger',
      env: ['JSON_LOGGER'],
      parse: p.boolean,
      default: false,
      doc: 'Default logger writes one-line JSON; no effect with a custom logger',
    },
    {
      key: 'logLevel',
      env: ['LOG_LEVEL'],
      parse: p.oneOf(LOG_LEVELS),
      default: defaultLevel,
      doc: 'One of debug, info, warn, error, fatal',
    },
  ];
}
