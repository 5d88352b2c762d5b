import { isAllowed, parseAddress, parseCidr, type AccessLists } from '../../../src/proxy/access/address-list';
import { silentLogger } from '../../../src/common/logging/logger';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import { configProblems } from '../../support/config-problems';
import { sampleFeatures } from '../../support/fixtures';
import { childPort } from '../../support/listen';
import { assertBuilt, request, startProgram, waitForStatus, type Program } from '../../support/program';
import { TestUpstream } from '../../support/upstream';

jest.setTimeout(60_000);

const KEY = 'access-key';

function lists(allow: string[], deny: string[]): AccessLists {
  const ranges = (entries: string[]) =>
    entries.map((entry) => {
      const range = parseCidr(entry);
      if (!range) throw new Error(`bad CIDR in the test: ${entry}`);
      return range;
    });
  return { allow: ranges(allow), deny: ranges(deny) };
}

describe('address lists (pure)', () => {
  test.each([
    [[], ['10.0.0.0/8'], '10.200.3.4', false],
    [[], ['10.0.0.0/8'], '11.0.0.1', true],
    [['192.168.0.0/16'], [], '192.168.77.1', true],
    [['192.168.0.0/16'], [], '192.169.0.1', false],
    [['192.168.0.0/16'], ['192.168.5.0/24'], '192.168.5.9', false],
    [['2001:db8::/32'], [], '2001:db8:1::7', true],
    [['2001:db8::/32'], [], '2001:db9::7', false],
    [[], ['::1'], '::1', false],
    [[], ['127.0.0.1'], '::ffff:127.0.0.1', false],
    [['127.0.0.0/8'], [], '::ffff:127.0.0.1', true],
    [['0.0.0.0/0'], [], '2001:db8::1', false],
    [['0.0.0.0/0', '::/0'], [], '2001:db8::1', true],
  ])('allow %j deny %j: %s is allowed: %s', (allow, deny, address, expected) => {
    expect(isAllowed(lists(allow, deny), address)).toBe(expected);
  });

  test.each([
    // IPv4-mapped entries are the IPv4 addresses they carry, in either list, whatever the client's form
    [[], ['::ffff:127.0.0.1'], '127.0.0.1', false],
    [[], ['::ffff:127.0.0.1'], '::ffff:127.0.0.1', false],
    [[], ['::ffff:127.0.0.1'], '127.0.0.2', true],
    [[], ['::ffff:127.0.0.0/104'], '127.9.9.9', false],
    [[], ['::ffff:127.0.0.0/104'], '128.0.0.1', true],
    [[], ['::ffff:7f00:0/104'], '127.0.0.1', false],
    [[], ['::FFFF:10.0.0.0/120'], '10.0.0.200', false],
    [['::ffff:127.0.0.1'], [], '127.0.0.1', true],
    [['::ffff:127.0.0.0/104'], [], '::ffff:127.3.4.5', true],
    [['::ffff:127.0.0.0/104'], [], '10.0.0.1', false],
    [['::ffff:0.0.0.0/96'], [], '203.0.113.7', true],
    [['::ffff:0.0.0.0/96'], [], '2001:db8::1', false],
    // an IPv6 range wider than the mapped block stays IPv6: it never matches an IPv4 client
    [[], ['::/0'], '127.0.0.1', true],
    [[], ['::/0'], '2001:db8::1', false],
  ])('mapped entries: allow %j deny %j: %s is allowed: %s', (allow, deny, address, expected) => {
    expect(isAllowed(lists(allow, deny), address)).toBe(expected);
  });

  test('an IPv4-mapped entry reads as its IPv4 range', () => {
    expect(parseCidr('::ffff:127.0.0.0/104')).toMatchObject({ family: 4, prefix: 8 });
    expect(parseCidr('::ffff:127.0.0.1')).toMatchObject({ family: 4, prefix: 32 });
    expect(parseCidr('::ffff:127.0.0.0/104')?.bits).toBe(parseCidr('127.0.0.0/8')?.bits);
    expect(parseCidr('::ffff:127.0.0.0/104')?.text).toBe('::ffff:127.0.0.0/104');
    expect(parseCidr('::ffff:0:0/95')).toMatchObject({ family: 6, prefix: 95 });
  });

  test('with a list configured, an address that does not parse is refused; without one, anything passes', () => {
    expect(isAllowed(lists([], ['10.0.0.0/8']), 'not-an-ip')).toBe(false);
    expect(isAllowed(lists([], ['10.0.0.0/8']), undefined)).toBe(false);
    expect(isAllowed(lists([], []), 'not-an-ip')).toBe(true);
  });

  test('IPv6 forms are read as one address: ::, an IPv4 tail, a zone id', () => {
    expect(parseAddress('2001:db8::1')).toEqual(parseAddress('2001:0db8:0:0:0:0:0:1'));
    expect(parseAddress('::ffff:10.1.2.3')).toEqual(parseAddress('10.1.2.3'));
    expect(parseAddress('fe80::1%eth0')).toEqual(parseAddress('fe80::1'));
    expect(parseAddress('10.1.2')).toBeUndefined();
  });

  test.each(['10.0.0.0/33', '2001:db8::/129', '10.0.0.0/8/1', 'example.com', '10.0.0.0/x'])(
    'ALLOW_LIST=%s stops start-up naming the variable',
    (entry) => {
      const problems = configProblems(() =>
        parseConfig(
          { logger: silentLogger },
          {
            FLAGS_URL: 'http://u/api',
            FLAGS_API_TOKEN: 't',
            FLAGS_PROXY_CLIENT_KEYS: 'k',
            ALLOW_LIST: entry,
          },
        ),
      );
      expect(problems.join('\n')).toContain(`Invalid ALLOW_LIST="${entry}": entry "${entry}" must be a CIDR`);
    },
  );
});

describe('ALLOW_LIST and DENY_LIST (the built program)', () => {
  let upstream: TestUpstream;
  let program: Program | undefined;

  beforeAll(assertBuilt);
  beforeEach(async () => {
    upstream = await new TestUpstream(sampleFeatures()).start();
  });
  afterEach(async () => {
    await program?.kill();
    program = undefined;
    await upstream.stop();
  });

  /** Started on a port the kernel chooses (PORT=0), read from its listening socket. */
  async function start(env: Record<string, string>): Promise<string> {
    program = startProgram({
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: upstream.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: '0',
      ...env,
    });
    return `http://127.0.0.1:${await childPort(program.child, program.output)}`;
  }

  const asKey = { authorization: KEY };

  test('a client in DENY_LIST gets 403 on every path, before readiness, CORS and keys', async () => {
    const base = await start({ DENY_LIST: '127.0.0.0/8,::1/128' });
    await waitForStatus(program as Program, `${base}/proxy`, 403, { headers: asKey });
    const refused = await request(`${base}/proxy/health`);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ name: 'NoAccessError' });
    expect(
      (await request(`${base}/proxy`, { method: 'OPTIONS', headers: { origin: 'https://a.example' } }))
        .status,
    ).toBe(403);
    expect((await request(`${base}/api/frontend`)).status).toBe(403);
  });

  test('a client outside ALLOW_LIST gets 403; inside it is served', async () => {
    const outside = await start({ ALLOW_LIST: '10.0.0.0/8' });
    await waitForStatus(program as Program, `${outside}/proxy/health`, 403);
    expect((await request(`${outside}/proxy`, { headers: asKey })).status).toBe(403);
    await program?.kill();

    const inside = await start({ ALLOW_LIST: '10.0.0.0/8,127.0.0.0/8' });
    await waitForStatus(program as Program, `${inside}/proxy`, 200, { headers: asKey });
  });

  test('with TRUST_PROXY the lists apply to the address X-Forwarded-For gives, IPv4 and IPv6', async () => {
    const base = await start({ TRUST_PROXY: 'true', DENY_LIST: '203.0.113.0/24,2001:db8::/32' });
    const from = (address: string) => ({ ...asKey, 'x-forwarded-for': address });
    await waitForStatus(program as Program, `${base}/proxy`, 200, { headers: from('198.51.100.7') });
    expect((await request(`${base}/proxy`, { headers: from('203.0.113.9') })).status).toBe(403);
    expect((await request(`${base}/proxy`, { headers: from('2001:db8::42') })).status).toBe(403);
    expect((await request(`${base}/proxy`, { headers: from('2001:db9::42') })).status).toBe(200);
    // a header that is not an address never slips past a list
    expect((await request(`${base}/proxy`, { headers: from('not-an-address') })).status).toBe(403);
  });

  test('an IPv4-mapped DENY_LIST entry refuses the IPv4 client it names', async () => {
    const base = await start({ DENY_LIST: '::ffff:127.0.0.1' });
    await waitForStatus(program as Program, `${base}/proxy/health`, 403);
    expect((await request(`${base}/proxy`, { headers: asKey })).status).toBe(403);
    await program?.kill();

    const range = await start({ DENY_LIST: '::ffff:127.0.0.0/104' });
    await waitForStatus(program as Program, `${range}/proxy/health`, 403);
    expect((await request(`${range}/api/frontend`, { headers: asKey })).status).toBe(403);
  });

  test('an IPv4-mapped ALLOW_LIST entry serves the IPv4 client it names', async () => {
    const base = await start({ ALLOW_LIST: '::ffff:127.0.0.1' });
    await waitForStatus(program as Program, `${base}/proxy`, 200, { headers: asKey });
    expect((await request(`${base}/api/frontend`, { headers: asKey })).status).toBe(200);
  });

  test('with TRUST_PROXY a mapped X-Forwarded-For address and a mapped entry compare as IPv4', async () => {
    const base = await start({ TRUST_PROXY: 'true', DENY_LIST: '::ffff:203.0.113.0/120' });
    const from = (address: string) => ({ ...asKey, 'x-forwarded-for': address });
    await waitForStatus(program as Program, `${base}/proxy`, 200, { headers: from('198.51.100.7') });
    expect((await request(`${base}/proxy`, { headers: from('203.0.113.9') })).status).toBe(403);
    expect((await request(`${base}/proxy`, { headers: from('::ffff:203.0.113.9') })).status).toBe(403);
  });

  test('without TRUST_PROXY X-Forwarded-For is ignored: the socket address decides', async () => {
    const base = await start({ DENY_LIST: '203.0.113.0/24' });
    const spoofed = { ...asKey, 'x-forwarded-for': '203.0.113.9' };
    await waitForStatus(program as Program, `${base}/proxy`, 200, { headers: spoofed });
  });
});
