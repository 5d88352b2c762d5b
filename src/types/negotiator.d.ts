/** The part of negotiator's API the proxy uses (0.6.x; the `preferred` argument is not in @types/negotiator). */
declare module 'negotiator' {
  class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The client's most preferred of `available`, ties broken by the order of `preferred`. */
    encoding(available: readonly string[], preferred?: readonly string[]): string | undefined;
  }
  export = Negotiator;
}
