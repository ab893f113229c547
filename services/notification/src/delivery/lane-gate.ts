import type { EventStore, RecordedEvent } from "@cheese/event-store";
import { DomainError, handleCommand } from "@cheese/service-kit";
import type { DeliveryEvent } from "../domain/delivery.ts";
import { laneDecider, sequenceOf } from "../domain/lane.ts";

/**
 * The ordered lanes as the scheduler meets them (domain/lane.ts). Before each attempt of a
 * delivery in a lane, the lane's stream is asked to release it: its turn, and its sequence. One
 * that is not the head waits, out of the scans, until a later event of its lane is followed.
 * A delivery that finishes, or is replayed or resent, moves its lane.
 */
export class LaneGate {
  /**
   * Deliveries that are not their lane's head, by lane stream: they are not tried again until a
   * later event of their lane is followed.
   */
  private readonly waiting = new Map<string, Set<number>>();
  /** The last revision followed per lane stream (of the `memory` most recently moved lanes). */
  private readonly revisions = new Map<string, number>();

  constructor(
    private readonly store: EventStore,
    private readonly memory: number,
  ) {}

  /** Whether the delivery waits for its lane to move. */
  waits(deliveryId: number, lane: string | undefined): boolean {
    return lane !== undefined && (this.waiting.get(lane)?.has(deliveryId) ?? false);
  }

  /** A lane's event was followed: the deliveries that waited for it to move, to be tried again. */
  moved(event: RecordedEvent): Iterable<number> {
    const lane = event.streamName;
    const revision = Math.max(this.revisions.get(lane) ?? -1, event.revision);
    this.revisions.delete(lane); // kept newest last; a lane forgotten costs one more try at most
    this.revisions.set(lane, revision);
    if (this.revisions.size > this.memory) this.revisions.delete(this.revisions.keys().next().value!);
    const waiting = this.waiting.get(lane);
    if (!waiting) return [];
    this.waiting.delete(lane);
    return waiting;
  }

  /**
   * Asks the delivery's lane whether it may go now (it is the head), and its sequence. One that
   * may not waits until its lane moves; `seen` is the lane revision followed before asking, so a
   * move followed meanwhile is not missed.
   */
  async turn(deliveryId: number, lane: string): Promise<{ sequence: number } | undefined> {
    const seen = this.revisions.get(lane) ?? -1;
    try {
      const released = await handleCommand(this.store, lane, laneDecider, { type: "Release", deliveryId });
      const sequence = sequenceOf(released.state, deliveryId);
      // A release that succeeded leaves the delivery released, numbered: never reached.
      if (sequence === null) throw new Error(`lane ${lane} released delivery ${deliveryId} without a number`);
      return { sequence };
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if ((this.revisions.get(lane) ?? -1) === seen) {
        const waiting = this.waiting.get(lane) ?? new Set<number>();
        waiting.add(deliveryId);
        this.waiting.set(lane, waiting);
      }
      return undefined;
    }
  }

  /**
   * Keeps a delivery's lane in step with it (any replica may; the lane's decider makes repeats
   * no-ops): a finished delivery lets the next one go, a replayed or resent one waits its turn.
   */
  async follow(lane: string, deliveryId: number, event: DeliveryEvent): Promise<void> {
    const finishes =
      event.type === "AttemptSucceeded" ||
      event.type === "DeliveryDeadLettered" ||
      event.type === "DeliveryCancelled";
    if (!finishes && event.type !== "DeliveryReplayed") return;
    // By round, so that a replica reading old events again (a start without a snapshot) neither
    // reopens a delivery whose replay has finished since nor finishes one replayed since.
    const round = "round" in event.data ? event.data.round : undefined;
    await handleCommand(
      this.store,
      lane,
      laneDecider,
      finishes
        ? { type: "Finish", deliveryId, ...(round !== undefined ? { round } : {}) }
        : { type: "Reopen", deliveryId, round: round ?? 0 },
    );
  }
}
