import { perSecond, type SharedBuckets, type SharedBucketsOptions } from "@cheese/rate-limits";
import type { Clock, Timer } from "@cheese/service-kit";

/**
 * The registrations' throttles (`rateLimit`): a bucket of one per registration in the NATS
 * key-value bucket `webhook_throttle`, shared by the replicas; held back while unreachable.
 */
export const WEBHOOK_THROTTLE: SharedBucketsOptions = {
  bucket: "webhook_throttle",
  // A bucket of one is full again within a second (`perSecond` is at least 1).
  ttlMs: 60_000,
  unreachable: "hold",
};

/**
 * The registrations' throttles as the scheduler asks them. A registration with a `rateLimit` has
 * a bucket of one shared by the replicas (`WEBHOOK_THROTTLE`): an attempt goes out only with its
 * slot. Between slots the registration's deliveries wait out of the scans, one of them asks for
 * the next slot when it is due, and the scheduler is woken then (`wake`).
 */
export class ThrottleGate {
  /** Throttled registrations: when this process may next ask for an attempt slot (epoch ms). */
  private readonly until = new Map<number, number>();
  /** Throttled registrations with an attempt asking for its slot now. */
  private readonly taking = new Set<number>();
  private readonly wakes = new Map<number, Timer>();

  constructor(
    private readonly throttle: Pick<SharedBuckets, "admit">,
    private readonly clock: Clock,
    /** Scans for due work again: a registration's next slot has come. */
    private readonly wake: () => void,
  ) {}

  /** Whether the registration is throttled (as its last attempt found it). */
  has(webhookId: number): boolean {
    return this.until.has(webhookId);
  }

  /**
   * Whether a throttled registration's deliveries wait: until its next slot, and while one of
   * them asks for it. Otherwise the caller's delivery is the one that asks (`admitted`, then
   * `asked` once its attempt is over).
   */
  waits(webhookId: number): boolean {
    const until = this.until.get(webhookId);
    if (until === undefined) return false;
    if (until > this.now() || this.taking.has(webhookId)) return true;
    this.taking.add(webhookId);
    return false;
  }

  /** The attempt that asked for the registration's slot is over (sent or not). */
  asked(webhookId: number): void {
    this.taking.delete(webhookId);
  }

  /** Asks the throttle for the registration's slot; the registration's next scan waits for the next one. */
  async admitted(webhookId: number, rate: number): Promise<boolean> {
    const retryAt = await this.take(webhookId, rate).finally(() => {
      this.taking.delete(webhookId);
    });
    const until = retryAt ?? this.now() + 1000 / rate;
    this.until.set(webhookId, until);
    this.wakes.get(webhookId)?.cancel();
    this.wakes.set(
      webhookId,
      this.clock.setTimeout(() => {
        this.wakes.delete(webhookId);
        this.wake();
      }, until - this.now()),
    );
    return retryAt === undefined;
  }

  /**
   * Waits for a slot of the registration (a second request within one attempt); `stopped`: the
   * scheduler is closing, so it waits no longer.
   */
  async slot(webhookId: number, rate: number, stopped: () => boolean): Promise<void> {
    for (;;) {
      const retryAt = await this.take(webhookId, rate);
      if (retryAt === undefined || stopped()) return;
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, retryAt - this.now()));
    }
  }

  /** A registration whose throttle was removed stops waiting for slots. */
  lifted(webhookId: number): void {
    if (!this.until.delete(webhookId)) return;
    this.wakes.get(webhookId)?.cancel();
    this.wakes.delete(webhookId);
  }

  close(): void {
    for (const timer of this.wakes.values()) timer.cancel();
  }

  /**
   * Takes the registration's slot (its bucket of one) if it is free now: undefined when the
   * attempt may start, else the epoch millisecond to ask again at.
   */
  private async take(webhookId: number, rate: number): Promise<number | undefined> {
    const admission = await this.throttle.admit(String(webhookId), perSecond(rate));
    return admission.allowed ? undefined : this.now() + admission.retryAfterMs;
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
