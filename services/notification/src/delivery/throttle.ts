import { jsonCodec, type KvRecord, KvRecords, type MessageBus } from "@cheese/messaging";
import { type Clock, type Logger, systemClock } from "@cheese/service-kit";

/** The key-value bucket of the registrations' next free attempt slots, shared by every replica. */
export const THROTTLE_BUCKET = "webhook_throttle";
/** A slot record idle this long is gone; by then it lies in the past (a slot is at most 1 s long). */
const SLOT_TTL_MS = 60_000;
/** When the shared slots cannot be read (NATS away), the attempt waits this long and asks again. */
const UNAVAILABLE_RETRY_MS = 1000;

/** A registration's next free slot: the earliest epoch millisecond its next attempt may start. */
interface Slot {
  next: number;
}

/**
 * The throttle's rule (GCRA without a burst): an attempt may start at `now` when the next free
 * slot is not later; it then moves the slot to one interval (1000 / perSecond ms) after `now`.
 * Otherwise the attempt waits until the slot (`retryAt`). Granted starts are so always at least
 * one interval apart.
 */
export function takeSlot(
  next: number | undefined,
  now: number,
  perSecond: number,
): { granted: true; next: number } | { granted: false; retryAt: number } {
  if (next !== undefined && next > now) return { granted: false, retryAt: next };
  return { granted: true, next: now + 1000 / perSecond };
}

/**
 * Per-registration throttles shared by the notification replicas (docs/webhooks.md "Throttle"):
 * one record per registration in a NATS key-value bucket holding its next free slot, moved only
 * by compare-and-set on the revision read, so of two replicas asking for the same slot exactly
 * one gets it and the other waits for the next. A replica's last view of the record saves the
 * read: a write at a stale revision fails and reads again.
 */
export class WebhookThrottle {
  private readonly records: KvRecords<Slot>;
  private readonly views = new Map<number, KvRecord<Slot>>();

  constructor(
    bus: MessageBus,
    private readonly logger: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    this.records = new KvRecords(bus, THROTTLE_BUCKET, slotCodec, { ttlMs: SLOT_TTL_MS });
  }

  /**
   * Takes the registration's slot if it is free now: undefined when the attempt may start, else
   * the epoch millisecond to ask again at (the next slot, as far as this replica knows).
   */
  async take(webhookId: number, perSecond: number): Promise<number | undefined> {
    const key = String(webhookId);
    const view = this.views.get(webhookId);
    // Slots only move forward: one this replica saw in the future is still taken.
    if (view?.value && view.value.next > this.now()) return view.value.next;
    let retryAt: number | undefined;
    try {
      const written = await this.records.update(
        key,
        (current) => {
          retryAt = undefined;
          const taken = takeSlot(current?.value?.next, this.now(), perSecond);
          if (taken.granted) return { next: taken.next };
          retryAt = taken.retryAt;
          if (current) this.views.set(webhookId, current);
          return undefined;
        },
        view ?? null,
      );
      if (written) this.views.set(webhookId, written);
      return written ? undefined : retryAt;
    } catch (error) {
      this.views.delete(webhookId);
      this.logger.warn({ err: error, webhookId }, "webhook throttle unavailable; the attempt waits");
      return this.now() + UNAVAILABLE_RETRY_MS;
    }
  }

  /** Forgets what this replica knows of a registration's slot (its throttle was removed). */
  forget(webhookId: number): void {
    this.views.delete(webhookId);
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}

const slotCodec = jsonCodec<Slot>((parsed) => {
  const slot = parsed as Slot | null;
  return slot && typeof slot.next === "number" ? slot : undefined;
});
