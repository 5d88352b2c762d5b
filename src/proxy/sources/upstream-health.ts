import { tell, type Logger } from '../../common/logging/logger';

/**
 * Whether an environment's upstream answers its definitions fetches, told once per change: one
 * warning when a fetch first fails ("lost"), one line when a fetch succeeds again ("back"); the
 * failures in between go to debug level, however many polls and kinds of request fail meanwhile.
 */
export class UpstreamHealth {
  /** Epoch ms of the first failure of the current outage; 0 while the upstream answers. */
  private lostAt = 0;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    /** e.g. `the upstream http://host/api/client/features of environment "production"` */
    private readonly what: string,
    /** True once definitions are held (then they are served during the outage). */
    private readonly holdsDefinitions: () => boolean,
  ) {}

  /** True from a failed fetch until a fetch succeeds. */
  get lost(): boolean {
    return this.lostAt !== 0;
  }

  /** Since when the upstream has not answered (epoch ms; 0 while it answers). */
  get lostSince(): number {
    return this.lostAt;
  }

  /** A definitions fetch failed for `reason` (the SDK's message: URL and status, never a token). */
  fetchFailed(reason: string): void {
    const now = Date.now();
    this.failures += 1;
    if (this.lostAt !== 0) {
      this.logger.debug(`${this.what}: still failing: ${reason}`);
      return;
    }
    this.lostAt = now;
    this.failures = 1;
    const meanwhile = this.holdsDefinitions()
      ? 'the last good definitions are served'
      : 'nothing is served until it answers';
    this.logger.warn(
      `${this.what} is lost: ${reason}; ${meanwhile}, and further failures are logged at debug level until it answers again`,
    );
  }

  /** Another request to the upstream (usage, registration) failed: logged at debug level while lost. */
  otherFailed(reason: string): boolean {
    if (this.lostAt === 0) return false;
    this.logger.debug(`${this.what}: still failing: ${reason}`);
    return true;
  }

  /** A definitions fetch succeeded (changed or not). */
  answered(): void {
    if (this.lostAt === 0) return;
    const seconds = Math.round((Date.now() - this.lostAt) / 1000);
    const failed = this.failures === 1 ? '1 failed request' : `${this.failures} failed requests`;
    tell(this.logger, `${this.what} is back after ${seconds} s (${failed})`);
    this.lostAt = 0;
    this.failures = 0;
  }
}
