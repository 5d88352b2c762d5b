import { hash, timingSafeEqual } from 'node:crypto';
import { ConfigError } from '../../common/config/resolve';
import { offlineProjects } from '../offline/offline-keys';
import type { TokenValidator } from '../token-validation/token-validator';
import type { ValidationCaller } from '../token-validation/waiting-tokens';
import { parseUnleashToken } from '../token-validation/unleash-token';
import { ValidationUnavailable } from '../token-validation/validation-unavailable';
import type { ScopeServing } from './environment';
import type { EnvironmentRegistry } from './registry';

/** Which endpoints a key is for: frontend endpoints (frontend tokens) or the client API (client tokens). */
export type KeyKind = 'frontend' | 'client';

const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

/** Longest key remembered as accepted on a connection. */
const REMEMBERED_MAX_LENGTH = 512;

/** The upstream's token types accepted for each kind (Unleash 8 calls backend tokens `client` there). */
const ACCEPTED_TYPES: Record<KeyKind, readonly string[]> = {
  frontend: ['frontend'],
  client: ['client', 'backend'],
};

interface Configured {
  /** The secret a client sends (`secret` of `secret@environment`). */
  readonly secret: string;
  readonly digest: Buffer;
  /** Resolved on first use: environments are known, their views built lazily. */
  readonly serving: () => ScopeServing;
}

export interface KeyScopesOptions {
  registry: EnvironmentRegistry;
  /** `FLAGS_PROXY_CLIENT_KEYS`: `secret`, `secret@environment`, or an Unleash-format token (pretrusted). */
  clientKeys: readonly string[];
  /** Tokens accepted on the client API without asking: server-side SDK tokens and the upstream tokens. */
  clientTokens: readonly string[];
  /** Asks the upstream about other Unleash-format keys; undefined: never ask. */
  validator: TokenValidator | undefined;
  /** The names the operator gave the upstream tokens and the keys under, for start-up problems. */
  names?: { tokens: string; keys: string };
}

/**
 * The key step: a key's `Scope` (environment, projects) and what serves it, or a refusal. Configured
 * keys are compared in constant time; an unconfigured key in Unleash's format is asked about
 * upstream (once, then remembered); any other string is refused without asking.
 */
export class KeyScopes {
  private readonly configured: Record<KeyKind, readonly Configured[]>;
  private readonly lastOnConnection = new WeakMap<
    object,
    { key: Buffer; kind: KeyKind; serving: ScopeServing }
  >();

  constructor(private readonly options: KeyScopesOptions) {
    const { registry } = options;
    const names = options.names ?? { tokens: 'FLAGS_API_TOKEN', keys: 'client keys' };
    const frontend = options.clientKeys.map((key) => configuredKey(registry, key, names));
    const client = options.clientTokens.map((token) => configuredKey(registry, token, names));
    this.configured = { frontend, client };
  }

  /** The configured client keys as clients send them. */
  get clientKeySecrets(): string[] {
    return this.configured.frontend.map((c) => c.secret);
  }

  /** Whether asking the upstream is on. */
  get validating(): boolean {
    return this.options.validator !== undefined;
  }

  /**
   * What is known without waiting: the serving of an accepted key, `null` for a refusal, undefined
   * when the upstream must be asked (`resolve`).
   */
  known(key: string, kind: KeyKind): ScopeServing | null | undefined {
    return this.match(key, kind) ?? this.asked(key, kind);
  }

  /**
   * What the upstream said of a key that is not configured (null: refused, undefined: not asked
   * yet). A key not in Unleash's format, or naming an environment no upstream token holds (nothing
   * could serve it), is refused without asking.
   */
  private asked(key: string, kind: KeyKind): ScopeServing | null | undefined {
    const validator = this.options.validator;
    if (!validator) return null;
    const parsed = parseUnleashToken(key);
    if (parsed === undefined || this.options.registry.byName(parsed.environment) === undefined) return null;
    const verdict = validator.known(key);
    if (verdict === undefined) return undefined;
    if (verdict === null) return null;
    return this.servingOf(verdict, kind) ?? null;
  }

  /**
   * `known`, remembering the configured key last accepted on a connection (a keep-alive client
   * repeating its key is not hashed again; the comparison with the remembered key is constant-time,
   * and an unequal key goes through the full check). Configured keys are fixed for the process's
   * life; keys the upstream validated are looked up every time, as they can be revoked.
   */
  knownOn(connection: object, key: string, kind: KeyKind): ScopeServing | null | undefined {
    const last = this.lastOnConnection.get(connection);
    if (last !== undefined && last.kind === kind && last.key.length === Buffer.byteLength(key)) {
      if (timingSafeEqual(last.key, Buffer.from(key))) return last.serving;
    }
    const found = this.match(key, kind);
    if (found) {
      // only whole-environment servings: a project view may be dropped and rebuilt
      if (key.length <= REMEMBERED_MAX_LENGTH && found === found.environment.all)
        this.lastOnConnection.set(connection, { key: Buffer.from(key), kind, serving: found });
      return found;
    }
    return this.asked(key, kind);
  }

  /**
   * The serving of a key, asking the upstream when needed; undefined when refused; a
   * `ValidationUnavailable` (503) when it could not be asked or did not answer. `gone` gives the
   * signal of the client going (asked for only when the upstream must be waited for); `caller`
   * the caller the request belongs to in the validation queue (by default, its own).
   */
  async resolve(
    key: string,
    kind: KeyKind,
    gone?: () => AbortSignal,
    caller?: ValidationCaller,
  ): Promise<ScopeServing | ValidationUnavailable | undefined> {
    const known = this.known(key, kind);
    if (known !== undefined) return known ?? undefined;
    const verdict = await this.options.validator?.check(key, gone?.(), caller);
    if (verdict instanceof ValidationUnavailable) return verdict;
    return verdict ? this.servingOf(verdict, kind) : undefined;
  }

  private servingOf(
    token: { type: string; environment: string | undefined; projects: readonly string[] },
    kind: KeyKind,
  ): ScopeServing | undefined {
    if (!ACCEPTED_TYPES[kind].includes(token.type) || token.environment === undefined) return undefined;
    return this.options.registry.serving(token.environment, token.projects);
  }

  /** Constant-time comparison with every configured key of the kind. */
  private match(key: string, kind: KeyKind): ScopeServing | undefined {
    const d = digest(key);
    let found: Configured | undefined;
    for (const candidate of this.configured[kind]) {
      if (timingSafeEqual(candidate.digest, d) && found === undefined) found = candidate;
    }
    return found?.serving();
  }
}

/**
 * A configured key's scope: plain → the first upstream token's; `secret@environment` → that
 * environment's (when an upstream token names it; otherwise the whole entry is a plain key, as it
 * always was); an Unleash-format token → its own environment and project.
 */
function configuredKey(
  registry: EnvironmentRegistry,
  entry: string,
  names: { tokens: string; keys: string },
): Configured {
  if (registry.offline) {
    const projects = offlineProjects(entry);
    return { secret: entry, digest: digest(entry), serving: () => registry.first.servingFor(projects) };
  }
  const parsed = parseUnleashToken(entry);
  if (parsed) {
    if (parsed.projects.length === 0) {
      throw new ConfigError([
        `A key of ${names.keys} in the multi-project form \`[]:<environment>.<secret>\` cannot be pretrusted: only the upstream knows its projects`,
      ]);
    }
    const serving = registry.serving(parsed.environment, parsed.projects);
    if (!serving) {
      throw new ConfigError([
        `A key of ${names.keys} names environment "${parsed.environment}" and a project that no upstream token in ${names.tokens} covers`,
      ]);
    }
    // looked up on each use: a project view may have been dropped and rebuilt since
    return {
      secret: entry,
      digest: digest(entry),
      serving: () => registry.serving(parsed.environment, parsed.projects) ?? serving,
    };
  }
  const at = entry.lastIndexOf('@');
  const environment = at > 0 ? registry.byName(entry.slice(at + 1)) : undefined;
  if (environment) {
    const secret = entry.slice(0, at);
    return { secret, digest: digest(secret), serving: () => environment.all };
  }
  if (at > 0 && registry.named) {
    throw new ConfigError([
      `A key of ${names.keys} of the form secret@environment names an environment no upstream token in ${names.tokens} holds (${registry.environments.map((e) => e.name).join(', ')})`,
    ]);
  }
  return { secret: entry, digest: digest(entry), serving: () => registry.first.all };
}
