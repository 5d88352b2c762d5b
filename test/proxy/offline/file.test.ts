import { ConfigError } from '../../../src/common/config/resolve';
import { parseArguments } from '../../../src/proxy/command-line/parse-arguments';
import { interpret } from '../../../src/proxy/offline/definitions-file';
import { offlineProjects } from '../../../src/proxy/offline/offline-keys';

type Feature = {
  name: string;
  enabled: boolean;
  project: string;
  variants: unknown[];
  strategies: unknown[];
};

function accepted(text: string): { format: string; features: Feature[]; dropped: readonly string[] } {
  const reading = interpret(text);
  if ('refused' in reading) throw new Error(`refused: ${reading.refused}`);
  const definitions = reading.definitions as unknown as { features: Feature[] };
  return { format: reading.format, features: definitions.features, dropped: reading.dropped };
}

describe("reading offline mode's file", () => {
  test("the simple format becomes Edge's definitions: project default, one default strategy, the named variant alone", () => {
    const { format, features } = accepted(
      '{"a": {"enabled": true, "variant": "v"}, "b": {"enabled": false, "variant": null}}',
    );
    expect(format).toBe('simple');
    expect(features).toEqual([
      {
        name: 'a',
        enabled: true,
        project: 'default',
        impressionData: false,
        strategies: [{ name: 'default', parameters: {}, constraints: [], variants: [] }],
        variants: [{ name: 'v', weight: 1000, weightType: 'fix', stickiness: 'default' }],
      },
      expect.objectContaining({ name: 'b', enabled: false, variants: [] }),
    ]);
  });

  test('names are data in the simple format: __proto__ and constructor are toggles', () => {
    const { features } = accepted('{"__proto__": {"enabled": true}, "constructor": {"enabled": false}}');
    expect(features.map((f) => f.name)).toEqual(['__proto__', 'constructor']);
  });

  test('an empty object is the simple format with no toggles, as in Edge', () => {
    expect(accepted('{}')).toMatchObject({ format: 'simple', features: [] });
  });

  test("anything else is read as the client API's format, with the upstream answer's checks", () => {
    const { format, features, dropped } = accepted(
      JSON.stringify({
        version: 2,
        features: [{ name: 'x', enabled: true, strategies: [] }, 7, { enabled: true }],
      }),
    );
    expect(format).toBe('client API');
    expect(features.map((f) => f.name)).toEqual(['x']);
    expect(dropped).toEqual(['features[1]: not an object', 'features[2].name: not a string']);
  });

  test.each([
    ['not JSON', '{"a": ', 'it is not JSON'],
    [
      'a simple entry with a number for a variant',
      '{"a": {"enabled": true, "variant": 3}}',
      'nor the simple format',
    ],
    ['a list', '[]', 'nor the simple format'],
    [
      'features that are not a list',
      '{"features": {}}',
      "neither the client API's format (features: not a list)",
    ],
  ])('%s is refused, saying why', (_what, text, why) => {
    const reading = interpret(text);
    expect('refused' in reading && reading.refused).toContain(why);
  });
});

describe('offline tokens', () => {
  test.each([
    ['web-key', ['*']],
    ['secret@production', ['*']],
    ['*:development.abc', ['*']],
    ['[]:development.abc', ['*']],
    ['shop:development.abc', ['shop']],
  ])('%s reads %p', (token, projects) => {
    expect(offlineProjects(token)).toEqual(projects);
  });
});

describe('the command line', () => {
  test("no arguments read the environment; `offline` takes Edge's flags, long and short, repeated token flags adding up", () => {
    expect(parseArguments([])).toEqual({
      kind: 'serve',
      mode: 'default',
      options: {},
      variables: {},
      flags: {},
    });
    expect(
      parseArguments([
        'offline',
        '-b',
        'f.json',
        '--client-tokens=a,b',
        '-c',
        'c',
        '-f',
        'w',
        '--reload-interval',
        '5',
      ]),
    ).toEqual({
      kind: 'serve',
      mode: 'offline',
      options: { offline: true },
      variables: {
        BOOTSTRAP_FILE: 'f.json',
        CLIENT_TOKENS: 'a,b,c',
        FRONTEND_TOKENS: 'w',
        RELOAD_INTERVAL: '5',
      },
      flags: {
        BOOTSTRAP_FILE: '--bootstrap-file',
        CLIENT_TOKENS: '--client-tokens',
        FRONTEND_TOKENS: '--frontend-tokens',
        RELOAD_INTERVAL: '--reload-interval',
      },
    });
  });

  test.each([
    [['serve'], 'Unknown command "serve": expected one of edge, offline, health, ready'],
    [['offline', '--tokens', 'x'], 'Unknown flag --tokens for offline'],
    [['offline', '--bootstrap-file'], '--bootstrap-file needs a value'],
  ])('%p stops start-up: %s', (args, problem) => {
    expect(() => parseArguments(args)).toThrow(ConfigError);
    expect(() => parseArguments(args)).toThrow(problem);
  });
});
