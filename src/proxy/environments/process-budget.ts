import type { Registry } from 'prom-client';
import type { ProxyConfig } from '../config/types';
import type { ScopeServing } from './environment';
import { ViewBudget } from './view-budget';
import { EvaluationMemory } from '../engine/evaluation-memory';
import { StreamSlots } from '../ofrep/stream-limit';

/**
 * The limits and memory budgets of one app (one `createApp`), shared by every environment and
 * project view in it: change-stream slots (with the descriptor headroom), the evaluation memory
 * (answer caches, memos, body buffers) and the project views kept. Made once per app and handed
 * down; two apps in one process have one each and share nothing.
 */
export class ProcessBudget {
  readonly streams: StreamSlots;
  readonly evaluation = new EvaluationMemory();
  /** The project views kept, every environment together. */
  readonly views = new ViewBudget<ScopeServing>();

  /** `registry`: where the stream series go (the app's). */
  constructor(config: Pick<ProxyConfig, 'maxStreams'>, registry: Registry) {
    this.streams = new StreamSlots(config.maxStreams, registry);
  }
}
