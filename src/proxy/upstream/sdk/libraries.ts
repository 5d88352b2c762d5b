import { createRequire } from 'node:module';
import { defaultStrategies } from './modules';

/**
 * The libraries `unleash-client` evaluates constraints and strategies with, loaded from its own
 * directory (the very modules its operators call, whatever versions it resolves), for the engine's
 * compiled checks (`engine/compiled/`): semver for SEMVER_*, ip-address for IN_CIDR and
 * `remoteAddress`, re2js for REGEX. Typed as far as the engine uses them.
 */

/** A parsed version as semver 7 makes it. */
export type SemVer = object;

export interface SemverLibrary {
  valid(version: string): string | null;
  eq(a: string, b: SemVer): boolean;
  gt(a: string, b: SemVer): boolean;
  gte(a: string, b: SemVer): boolean;
  lt(a: string, b: SemVer): boolean;
  lte(a: string, b: SemVer): boolean;
  SemVer: new (version: string) => SemVer;
}

/** An IPv4 or IPv6 address (with an optional subnet) as ip-address parses it. */
export interface IpAddress {
  correctForm(): string;
  isInSubnet(subnet: IpAddress): boolean;
}

export interface IpAddressClass {
  new (address: string): IpAddress;
  isValid(address: string): boolean;
}

export interface IpAddressLibrary {
  Address4: IpAddressClass;
  Address6: IpAddressClass;
}

export interface Re2Pattern {
  matcher(input: string): { find(): boolean };
}

export interface Re2Library {
  RE2JS: { compile(pattern: string, flags?: number): Re2Pattern; CASE_INSENSITIVE: number };
}

const fromSdk = () => createRequire(require.resolve('unleash-client'));

let semver: SemverLibrary | undefined;
let ipAddress: IpAddressLibrary | undefined;
let re2: Re2Library | undefined;

export function sdkSemver(): SemverLibrary {
  return (semver ??= fromSdk()('semver') as SemverLibrary);
}

export function sdkIpAddress(): IpAddressLibrary {
  return (ipAddress ??= fromSdk()('ip-address') as IpAddressLibrary);
}

export function sdkRe2(): Re2Library {
  return (re2 ??= fromSdk()('re2js') as Re2Library);
}

/**
 * The host name the SDK's built-in `applicationHostname` strategy compares with (read once by its
 * instance, lower-cased); undefined when that instance does not have it.
 */
export function sdkHostname(): string | undefined {
  const strategy: unknown = defaultStrategies.find((s) => s.name === 'applicationHostname');
  const hostname: unknown =
    typeof strategy === 'object' && strategy !== null ? Reflect.get(strategy, 'hostname') : undefined;
  return typeof hostname === 'string' ? hostname : undefined;
}
