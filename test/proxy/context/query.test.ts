import { ValidationError } from '../../../src/common/errors/http-errors';
import { readQuery } from '../../../src/proxy/context/query';

const LIMITS = { maxProperties: 10, maxValueLength: 100, maxTotalLength: 1000 };

const refusal = (query: string): string => {
  try {
    readQuery(query, LIMITS);
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as Error).message;
  }
  throw new Error(`${query} was accepted`);
};

describe('readQuery', () => {
  test('root fields, properties in both spellings, decoded; empty values and remoteAddress dropped', () => {
    expect(
      readQuery('userId=u%201&sessionId=&plan=pro&properties[region]=e+u&remoteAddress=1.2.3.4&&x=', LIMITS),
    ).toEqual({ root: { userId: 'u 1' }, properties: { plan: 'pro', region: 'e u' } });
    expect(readQuery('', LIMITS)).toEqual({ root: {}, properties: undefined });
    expect(readQuery('appName=web', LIMITS)).toEqual({ root: { appName: 'web' }, properties: undefined });
  });

  test('a parameter given twice is a 400 naming it, whatever its values', () => {
    for (const query of [
      'userId=a&userId=b',
      'userId=&userId=b',
      'userId=a&userId=',
      'x=1&userId=a&y=2&userId=a',
    ])
      expect(refusal(query)).toBe('Query parameter "userId" is given more than once; send it once');
    expect(refusal('plan=&plan=')).toBe('Query parameter "plan" is given more than once; send it once');
    expect(refusal('remoteAddress=1&remoteAddress=2')).toBe(
      'Query parameter "remoteAddress" is given more than once; send it once',
    );
  });

  test('two spellings of one property are a 400 naming both, the first one first', () => {
    expect(refusal('a=1&plan=pro&properties[plan]=free')).toBe(
      'Query parameters "plan" and "properties[plan]" both give the property "plan"; send it once',
    );
    expect(refusal('properties[plan]=&b=2&plan=free')).toBe(
      'Query parameters "properties[plan]" and "plan" both give the property "plan"; send it once',
    );
  });

  test('a root field and a property of the same name are two fields; so are remoteAddress and its property', () => {
    expect(readQuery('userId=a&properties[userId]=b', LIMITS)).toEqual({
      root: { userId: 'a' },
      properties: { userId: 'b' },
    });
    expect(readQuery('remoteAddress=1&properties[remoteAddress]=2', LIMITS)).toEqual({
      root: {},
      properties: { remoteAddress: '2' },
    });
  });

  test('names that are not data, and names of Object.prototype, are refused or kept as fields', () => {
    expect(refusal('__proto__=x')).toContain('"__proto__" cannot be the name of a context field');
    expect(refusal('properties[constructor]=x')).toContain(
      '"constructor" cannot be the name of a context field',
    );
    const { properties } = readQuery('toString=a&hasOwnProperty=b', LIMITS);
    expect(properties).toEqual({ toString: 'a', hasOwnProperty: 'b' });
    expect(Object.getPrototypeOf(properties)).toBe(Object.prototype);
  });

  test('the limits: parameters, properties, value length', () => {
    const roots = 'appName=a&environment=e&userId=u&sessionId=s&currentTime=c&remoteAddress=r';
    const many = [roots, ...Array.from({ length: 11 }, (_, i) => `p${i}=v`)].join('&');
    expect(refusal(many)).toContain('more than 16 parameters');
    const props = Array.from({ length: 11 }, (_, i) => `p${i}=v`).join('&');
    expect(refusal(props)).toContain('more than 10 properties');
    expect(refusal(`userId=${'x'.repeat(101)}`)).toContain('Query parameter "userId" is longer than 100');
  });
});
