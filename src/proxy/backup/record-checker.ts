import { parseRecord, type BackupRecord, type RecordScope } from './backup-record';
import type { BackupStoreHooks } from './backup-store';

/** Distinct lines remembered as said; past it they are forgotten (and may be said once more). */
const MAX_REMEMBERED = 100;

/**
 * Checks what a store read (`parseRecord`) for one reader's scope and reports what it refused: a
 * damaged record is a fault (rate-limited, as every fault); a whole record of another scope, or
 * tokens in it that cannot be served, are named once, however often the store is read again.
 */
export class RecordChecker {
  private readonly said = new Set<string>();

  constructor(
    private readonly scope: RecordScope,
    private readonly hooks: Pick<BackupStoreHooks, 'onFault' | 'onIgnored'>,
  ) {}

  /** The record to serve, or undefined when it is refused; `where` names it in a line. */
  check(raw: string, where: string): BackupRecord | undefined {
    const parsed = parseRecord(raw, this.scope);
    if ('refused' in parsed) {
      const line = `ignoring ${where}: ${parsed.refused}`;
      if (parsed.foreign) this.once(line);
      else this.hooks.onFault('invalid', line);
      return undefined;
    }
    if (parsed.ignoredTokens !== undefined) this.once(`${where}: ${parsed.ignoredTokens}`);
    return parsed.record;
  }

  private once(line: string): void {
    if (this.said.has(line)) return;
    if (this.said.size >= MAX_REMEMBERED) this.said.clear();
    this.said.add(line);
    this.hooks.onIgnored(line);
  }
}
