import { splitTarget } from '../../../src/common/http/request-target';

describe('request targets', () => {
  test.each([
    ['/api/frontend?x=1', undefined, '/api/frontend?x=1'],
    ['http://host/api/frontend', 'host', '/api/frontend'],
    ['HTTP://host:3063/api/frontend?userId=7', 'host:3063', '/api/frontend?userId=7'],
    ['https://[::1]:3043/proxy', '[::1]:3043', '/proxy'],
    ['http://host', 'host', '/'],
    ['http://host?x=1', 'host', '/?x=1'],
    ['http://host/a/../b#frag', 'host', '/a/../b'],
    ['http://host/%2e%2e/proxy', 'host', '/%2e%2e/proxy'],
  ])('%s: authority %s, origin form %s', (target, authority, origin) => {
    expect(splitTarget(target)).toEqual({ authority, origin });
  });

  test.each(['*', 'host:443', 'ftp://host/x', 'api/frontend', ''])('%j has no origin form', (target) => {
    expect(splitTarget(target)).toBeUndefined();
  });
});
