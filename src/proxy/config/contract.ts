/**
 * Which contract the names a proxy is configured by choose (DESIGN, fourth round):
 * `specification` under `FLAGS_*` (or the reference proxy's `UNLEASH_*`, or options in code): three
 * required options, `/all` off, port 3000; `edge` under Unleash Edge's names (`UPSTREAM_URL` with
 * `TOKENS` or no other name of the tokens; offline mode's `BOOTSTRAP_FILE` without an upstream URL)
 * and Edge's subcommands (`flags-proxy edge`, `flags-proxy offline`): client keys optional
 * (tokens validated upstream), `/all` on unless `DISABLE_ALL_ENDPOINT`, port 3063 unless `PORT`.
 */
export type Contract = 'specification' | 'edge';

/** Edge's default HTTP port. */
export const EDGE_PORT = 3063;

type Env = Record<string, string | undefined>;

const given = (env: Env, name: string) => env[name] !== undefined && env[name] !== '';

export function contractOf(
  env: Env,
  options: {
    flagsUrl?: unknown;
    unleashUrl?: unknown;
    flagsApiToken?: unknown;
    unleashApiToken?: unknown;
    offline?: unknown;
    edgeContract?: unknown;
  },
): Contract {
  // `flags-proxy edge` and `flags-proxy offline` are Edge's subcommands: Edge's contract.
  if (options.edgeContract === true || options.offline === true) return 'edge';
  const urlElsewhere =
    options.flagsUrl !== undefined ||
    options.unleashUrl !== undefined ||
    ['FLAGS_URL', 'UNLEASH_URL'].some((name) => given(env, name));
  const tokensElsewhere =
    options.flagsApiToken !== undefined ||
    options.unleashApiToken !== undefined ||
    ['FLAGS_API_TOKEN', 'UNLEASH_API_TOKEN'].some((name) => given(env, name));
  // UPSTREAM_URL with TOKENS, or with no other name of the upstream tokens (a missing TOKENS is then
  // named as Edge names it). Read from the names given, not the values: a malformed UPSTREAM_URL
  // still chooses the contract its problem is worded in.
  const edgeNamed = given(env, 'UPSTREAM_URL') && !urlElsewhere && !tokensElsewhere;
  const offline = given(env, 'BOOTSTRAP_FILE') && !urlElsewhere && !given(env, 'UPSTREAM_URL');
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
