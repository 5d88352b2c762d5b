import type { OptionSource } from '../../common/config/resolve';

/**
 * Which contract the names a proxy is configured by choose (DESIGN, fourth round):
 * `specification` under `FLAGS_*` (or the reference proxy's `UNLEASH_*`, or options in code): three
 * required options, `/all` off, port 3000; `edge` under Unleash Edge's names (`UPSTREAM_URL` +
 * `TOKENS`, or offline mode's `BOOTSTRAP_FILE` without an upstream URL): client keys optional
 * (tokens validated upstream), `/all` on unless `DISABLE_ALL_ENDPOINT`, port 3063 unless `PORT`.
 */
export type Contract = 'specification' | 'edge';

/** Edge's default HTTP port. */
export const EDGE_PORT = 3063;

type Env = Record<string, string | undefined>;

const given = (env: Env, name: string) => env[name] !== undefined && env[name] !== '';

export function contractOf(
  sources: ReadonlyMap<string, OptionSource>,
  env: Env,
  options: { flagsUrl?: unknown; unleashUrl?: unknown },
): Contract {
  const edgeNamed =
    sources.get('flagsUrl')?.name === 'UPSTREAM_URL' && sources.get('flagsApiToken')?.name === 'TOKENS';
  const upstreamGiven =
    options.flagsUrl !== undefined ||
    options.unleashUrl !== undefined ||
    ['FLAGS_URL', 'UNLEASH_URL', 'UPSTREAM_URL'].some((name) => given(env, name));
  const offline = given(env, 'BOOTSTRAP_FILE') && !upstreamGiven;
  return edgeNamed || offline ? 'edge' : 'specification';
}

/** How the start-up line names the contract. */
export function describeContract(config: {
  contract: Contract;
  clientKeys: readonly string[];
  enableAllEndpoint: boolean;
  upstreamTokenValidation: boolean;
}): string {
  const all = config.enableAllEndpoint ? '/all on' : '/all off';
  if (config.contract === 'specification') {
    return `the specification's contract (configured by FLAGS_*/UNLEASH_* names or in code): client keys required, ${all}`;
  }
  const keys = [
    config.clientKeys.length === 0 ? 'no client keys' : 'client keys',
    ...(config.upstreamTokenValidation ? ['tokens validated upstream'] : []),
  ].join(', ');
  return `Unleash Edge's contract (configured by Edge's names): ${keys}, ${all}`;
}
