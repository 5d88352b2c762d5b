/**
 * The functions the proxy calls from `unleash-client`'s modules below its public entry, re-exported
 * from here (each is named in `reach-ins.ts` and checked by test/proxy/upstream/sdk-contract.test.ts).
 */
export { post, buildHeaders } from 'unleash-client/lib/request';
export { defaultStrategies } from 'unleash-client/lib/strategy';
export { resolveBootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider';
