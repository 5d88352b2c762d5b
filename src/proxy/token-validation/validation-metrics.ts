import { Counter, Gauge, type Registry } from 'prom-client';
import type { TokenValidator } from './token-validator';

/**
 * The validator's queue, as Prometheus series (no labels carry a token): requests waiting for an
 * answer, unknown tokens queued and sent, calls in flight, calls by result and requests shed by a
 * bound. Registered only while validation is on.
 */
export function registerValidationMetrics(registry: Registry, validator: TokenValidator): void {
  const registers = [registry];
  new Gauge({
    name: 'flags_proxy_token_validation_waiters',
    help: 'Requests waiting for the upstream to validate their key',
    registers,
    aggregator: 'sum',
    collect() {
      this.set(validator.waiters);
    },
  });
  new Gauge({
    name: 'flags_proxy_token_validation_pending_tokens',
    help: 'Unknown tokens waiting to be validated (state="queued") or being validated (state="sent")',
    labelNames: ['state'],
    registers,
    aggregator: 'sum',
    collect() {
      const { queued, sent } = validator.pendingTokens;
      this.set({ state: 'queued' }, queued);
      this.set({ state: 'sent' }, sent);
    },
  });
  new Gauge({
    name: 'flags_proxy_token_validation_calls_in_flight',
    help: 'Validation calls of unknown tokens in flight',
    registers,
    aggregator: 'sum',
    collect() {
      this.set(validator.inFlight);
    },
  });
  new Counter({
    name: 'flags_proxy_token_validation_calls_total',
    help: 'Validation calls by result: answered (200), too_large (413: asked again in halves), failed (no answer: the keys get 503)',
    labelNames: ['result'],
    registers,
    aggregator: 'sum',
    collect() {
      this.reset();
      for (const [result, count] of Object.entries(validator.callResults)) this.inc({ result }, count);
    },
  });
  new Counter({
    name: 'flags_proxy_token_validation_shed_total',
    help: 'Requests answered 503 by a bound of the validation queue (queue length, waiters, wait time)',
    registers,
    aggregator: 'sum',
    collect() {
      this.reset();
      this.inc(validator.shed);
    },
  });
  new Counter({
    name: 'flags_proxy_token_validation_abandoned_total',
    help: 'Requests that stopped waiting for a validation because their client went',
    registers,
    aggregator: 'sum',
    collect() {
      this.reset();
      this.inc(validator.abandoned);
    },
  });
}
