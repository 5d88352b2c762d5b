import { isIPv4, isIPv6 } from 'node:net';

/** One CIDR range: the network's bits and how many of them must match. */
export interface CidrRange {
  /** As written, for messages. */
  readonly text: string;
  readonly family: 4 | 6;
  readonly bits: bigint;
  readonly prefix: number;
}

const WIDTH = { 4: 32, 6: 128 } as const;

function ipv4Bits(address: string): bigint {
  return address.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** The 128 bits of an IPv6 address (with `::` and an embedded IPv4 tail). */
function ipv6Bits(address: string): bigint {
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = ipv4Bits(tail);
    text = `${text.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = text.split('::');
  const groups = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'));
  const left = groups(head);
  const right = groups(rest);
  const middle = rest === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...middle, ...right].reduce(
    (acc, group) => (acc << 16n) | BigInt(parseInt(group, 16)),
    0n,
  );
}

/**
 * An address as the list compares it: IPv4, IPv6, or an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`,
 * how a dual-stack socket reports an IPv4 client) read as the IPv4 address it carries. Zone ids
 * (`fe80::1%eth0`) are dropped. Undefined for anything that is not an address.
 */
export function parseAddress(value: string): { family: 4 | 6; bits: bigint } | undefined {
  const address = value.trim().replace(/%.*$/, '');
  if (isIPv4(address)) return { family: 4, bits: ipv4Bits(address) };
  if (!isIPv6(address)) return undefined;
  const bits = ipv6Bits(address);
  if (bits >> 32n === 0xffffn) return { family: 4, bits: bits & 0xffffffffn };
  return { family: 6, bits };
}

/**
 * `10.0.0.0/8`, `2001:db8::/32`, or a single address (`/32` or `/128`); undefined when malformed.
 * An entry inside the IPv4-mapped block (`::ffff:127.0.0.1`, `::ffff:127.0.0.0/104`: prefix 96 or
 * more) is read as the IPv4 range it carries (`127.0.0.0/8`), as client addresses are: entries and
 * clients compare like with like. A wider IPv6 range (`::/0`) stays IPv6 and never matches an IPv4
 * client.
 */
export function parseCidr(text: string): CidrRange | undefined {
  const [address, prefixText, extra] = text.trim().split('/');
  if (extra !== undefined) return undefined;
  const family = isIPv4(address) ? 4 : isIPv6(address) ? 6 : undefined;
  if (family === undefined) return undefined;
  const width = WIDTH[family];
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? width : Number(prefixText);
  if (prefix > width) return undefined;
  const bits = mask(family === 4 ? ipv4Bits(address) : ipv6Bits(address), prefix, width);
  if (family === 6 && prefix >= 96 && bits >> 32n === 0xffffn)
    return { text: text.trim(), family: 4, bits: bits & 0xffffffffn, prefix: prefix - 96 };
  return { text: text.trim(), family, bits, prefix };
}

function mask(bits: bigint, prefix: number, width: number): bigint {
  const hostBits = BigInt(width - prefix);
  return (bits >> hostBits) << hostBits;
}

function contains(range: CidrRange, address: { family: 4 | 6; bits: bigint }): boolean {
  return (
    range.family === address.family && mask(address.bits, range.prefix, WIDTH[range.family]) === range.bits
  );
}

/** Unleash Edge's ALLOW_LIST / DENY_LIST: which client addresses may be served. */
export interface AccessLists {
  /** Empty: every address is allowed (Edge's default, `0.0.0.0/0, ::/0`). */
  readonly allow: readonly CidrRange[];
  /** Empty: no address is denied. */
  readonly deny: readonly CidrRange[];
}

export function hasAccessLists(lists: AccessLists): boolean {
  return lists.allow.length > 0 || lists.deny.length > 0;
}

/**
 * Whether a client at `address` may be served: not in a deny range, and in an allow range when
 * there are any. An address that does not parse (an `X-Forwarded-For` entry that is not an IP) is
 * refused whenever a list is configured: a list is never bypassed by a malformed header.
 */
export function isAllowed(lists: AccessLists, address: string | undefined): boolean {
  if (!hasAccessLists(lists)) return true;
  const parsed = address === undefined ? undefined : parseAddress(address);
  if (parsed === undefined) return false;
  if (lists.deny.some((range) => contains(range, parsed))) return false;
  return lists.allow.length === 0 || lists.allow.some((range) => contains(range, parsed));
}
