import { operandProblem } from '../../../src/common/definitions/constraint-operands';
import { crossReferenceProblems } from '../../../src/common/definitions/cross-references';
import { clientFeaturesSchema } from '../../../src/proxy/upstream/definitions-schema';
import { featuresFileSchema } from '../../../src/server/features/schema';

describe('the operand of a constraint', () => {
  it.each([
    // unleash-client 6 reads numbers with Number(value): '' and ' 4 ' are numbers to it, 'x' is not
    [{ operator: 'NUM_EQ', value: '' }, undefined],
    [{ operator: 'NUM_GT', value: ' 4 ' }, undefined],
    [{ operator: 'NUM_LT', value: 'x' }, 'number'],
    [{ operator: 'NUM_LT' }, 'single'],
    [{ operator: 'DATE_AFTER', value: '2024-05-01T00:00:00.000Z' }, undefined],
    [{ operator: 'DATE_BEFORE', value: 'soon' }, 'date'],
    [{ operator: 'SEMVER_EQ', value: '1.2.3-beta.1' }, undefined],
    [{ operator: 'SEMVER_GT', value: 'two' }, 'semver'],
    [{ operator: 'REGEX', value: null }, 'single'],
    [{ operator: 'IN', values: [] }, undefined],
    [{ operator: 'STR_CONTAINS', values: null }, 'list'],
    // the SDK evaluates a constraint of an operator it does not know as false: nothing to check
    [{ operator: 'LIKE' }, undefined],
  ])('%j: %s', (constraint, problem) => {
    expect(operandProblem(constraint)).toBe(problem);
  });
});

describe('the references of a definitions document', () => {
  it('names a second toggle name, a second segment id and a segment the document lacks, by path', () => {
    expect(
      crossReferenceProblems({
        features: [
          { name: 'a', strategies: [{ segments: [1, 7] }] },
          { name: 'a', strategies: null },
        ],
        segments: [{ id: 1 }, { id: 1 }],
      }),
    ).toEqual([
      { kind: 'second-name', path: ['features', 1, 'name'], name: 'a' },
      { kind: 'second-segment', path: ['segments', 1, 'id'], id: 1 },
      { kind: 'missing-segment', path: ['features', 0, 'strategies', 0, 'segments', 1], id: 7 },
    ]);
  });
});

describe('the two schemas of definitions', () => {
  const document = {
    version: 2,
    features: [
      {
        name: 'checkout',
        enabled: true,
        strategies: [
          { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
        ],
        variants: [{ name: 'blue', weight: 1000, payload: { type: 'string', value: 'b' } }],
      },
    ],
    segments: [],
  };

  it('both read a client API document', () => {
    expect(clientFeaturesSchema.safeParse(document).success).toBe(true);
    expect(featuresFileSchema.safeParse(document).success).toBe(true);
  });

  it('the proxy documents what the flag server refuses to author: nulls and unknown operators', () => {
    const loose = {
      features: [
        {
          name: 'checkout',
          enabled: true,
          project: null,
          impressionData: null,
          strategies: [
            {
              name: 'default',
              constraints: [{ contextName: 'plan', operator: 'LIKE', values: [], inverted: null }],
            },
          ],
          variants: null,
        },
      ],
      segments: null,
    };
    expect(clientFeaturesSchema.safeParse(loose).success).toBe(true);
    const paths = featuresFileSchema.safeParse(loose).error?.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(
      expect.arrayContaining([
        'features.0.project',
        'features.0.impressionData',
        'features.0.strategies.0.constraints.0.operator',
        'features.0.variants',
        'segments',
      ]),
    );
  });

  it('the flag server fills in the defaults of the served payload', () => {
    const parsed = featuresFileSchema.parse({ features: [{ name: 'a', enabled: false }] });
    expect(parsed).toEqual({
      features: [
        {
          name: 'a',
          type: 'release',
          project: 'default',
          enabled: false,
          stale: false,
          impressionData: false,
          strategies: [],
          variants: [],
          tags: [],
        },
      ],
      segments: [],
    });
  });
});
