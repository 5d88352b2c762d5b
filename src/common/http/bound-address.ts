import type { AddressInfo } from 'node:net';

/**
 * How a start-up line names the address a server holds: `every interface (::)` for the unspecified
 * addresses Node binds without a host (`::`, or `0.0.0.0` without IPv6), else the address itself.
 */
export function describeBoundAddress(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') return address ?? 'an unknown address';
  if (address.address === '::') return 'every interface (::)';
  if (address.address === '0.0.0.0') return 'every IPv4 interface (0.0.0.0)';
  return address.family === 'IPv6' ? `[${address.address}]` : address.address;
}
