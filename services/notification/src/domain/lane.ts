import type { WebhookEventKind } from "@cheese/contracts";
import { conflict, type Decider, type DomainEvent, notFound } from "@cheese/service-kit";

/**
 * An ordered lane: the deliveries of one aggregate's events (one order, one cheese, one customer,
 * one API key) to one registration with `ordered: true`, which go out one at a time in the order
 * the events happened. The lane's stream decides which delivery may be attempted (its head), so
 * every replica's scheduler respects it: a delivery is released (given its sequence number, the
 * `X-Cheese-Sequence` its attempts carry) only while it is the head, and the next one becomes the
 * head only once the one before is finished (delivered, dead-lettered or cancelled).
 *
 * The order: released deliveries by their sequence, then those not released yet by when their
 * event happened (the revision of the aggregate's stream the integration event came from, else its
 * publish time; the delivery id last). A delivery recorded late (its fan-out was retried) thus
 * still goes before the later events of its aggregate that have not gone out yet; one recorded
 * after a later event was released comes after it, with the next sequence.
 */
export interface LaneEntry {
  deliveryId: number;
  /** The envelope's `created_at`: when the integration event was published. */
  createdAt: string;
  /** The revision of the event in its aggregate's stream, when the integration event said it. */
  revision?: number;
  /** Given when it was first released; kept through replays. */
  sequence: number | null;
  /** Delivered, dead-lettered or cancelled (until a replay or resend opens it again). */
  done: boolean;
  /** The delivery's round it stands for (0, then n after the nth replay or resend). */
  round: number;
}

export type LaneEvent =
  | DomainEvent<"LaneJoined", { deliveryId: number; createdAt: string; revision?: number }>
  | DomainEvent<"LaneReleased", { deliveryId: number; sequence: number }>
  | DomainEvent<"LaneEntryFinished", { deliveryId: number }>
  | DomainEvent<"LaneEntryReopened", { deliveryId: number; round: number }>;

export type LaneCommand =
  | { type: "Join"; deliveryId: number; createdAt: string; revision?: number }
  /** Asked before each attempt of a delivery of the lane: refused unless it is the head. */
  | { type: "Release"; deliveryId: number }
  /**
   * The delivery finished `round` (absent: whatever its round, as a cancellation does). A round
   * older than the lane's is a late word about it: nothing changes.
   */
  | { type: "Finish"; deliveryId: number; round?: number }
  /**
   * The delivery was replayed or resent as `round`: it waits for its turn again (by its
   * sequence). A round the lane already has is nothing new (a replica reading history again).
   */
  | { type: "Reopen"; deliveryId: number; round: number };

export interface LaneState {
  entries: LaneEntry[];
  /** Sequence numbers given so far. */
  released: number;
}

/** `webhooklane-<webhook id>:<aggregate>`, e.g. `webhooklane-3:order-7`. */
export const laneStream = (webhookId: number, aggregate: string) => `webhooklane-${webhookId}:${aggregate}`;

/**
 * The aggregate an event of this kind belongs to, by its data; undefined for `webhook.test`, which
 * an operator sends to one registration and which belongs to no lane.
 */
export function aggregateOf(kind: WebhookEventKind, data: Record<string, unknown>): string | undefined {
  const id = (field: string) =>
    data[field] === undefined || data[field] === null ? undefined : String(data[field]);
  const [family] = kind.split(".");
  const key =
    family === "order"
      ? id("order_id")
      : family === "cheese"
        ? id("cheese_id")
        : family === "customer"
          ? id("customer_id")
          : family === "api_key"
            ? id("key_id")
            : kind === "webhook.disabled"
              ? id("webhook_id")
              : undefined;
  if (key === undefined) return undefined;
  return `${family === "api_key" ? "apikey" : family}-${key}`;
}

/** Whether `a` happened before `b` (see {@link LaneEntry}). */
function before(a: LaneEntry, b: LaneEntry): number {
  if (a.revision !== undefined && b.revision !== undefined && a.revision !== b.revision)
    return a.revision - b.revision;
  return a.createdAt.localeCompare(b.createdAt) || a.deliveryId - b.deliveryId;
}

/** The delivery that may be attempted now, if any. */
export function laneHead(state: LaneState): LaneEntry | undefined {
  const open = state.entries.filter((entry) => !entry.done);
  const released = open.filter((entry) => entry.sequence !== null);
  if (released.length > 0) return released.reduce((a, b) => ((a.sequence ?? 0) <= (b.sequence ?? 0) ? a : b));
  return open.sort(before)[0];
}

const withEntry = (state: LaneState, deliveryId: number, change: Partial<LaneEntry>): LaneState => ({
  ...state,
  entries: state.entries.map((entry) => (entry.deliveryId === deliveryId ? { ...entry, ...change } : entry)),
});

export const laneDecider: Decider<LaneState, LaneCommand, LaneEvent> = {
  initialState: () => ({ entries: [], released: 0 }),
  evolve(state, event) {
    switch (event.type) {
      case "LaneJoined":
        return {
          ...state,
          entries: [...state.entries, { ...event.data, sequence: null, done: false, round: 0 }],
        };
      case "LaneReleased":
        return {
          ...withEntry(state, event.data.deliveryId, { sequence: event.data.sequence }),
          released: Math.max(state.released, event.data.sequence),
        };
      case "LaneEntryFinished":
        return withEntry(state, event.data.deliveryId, { done: true });
      case "LaneEntryReopened":
        return withEntry(state, event.data.deliveryId, { done: false, round: event.data.round });
      default:
        return state;
    }
  },
  decide(command, state) {
    const entry = state.entries.find(({ deliveryId }) => deliveryId === command.deliveryId);
    switch (command.type) {
      case "Join": {
        if (entry) return []; // a repeated fan-out
        const { deliveryId, createdAt, revision } = command;
        return [
          {
            type: "LaneJoined",
            data: { deliveryId, createdAt, ...(revision !== undefined ? { revision } : {}) },
          },
        ];
      }
      case "Release": {
        if (!entry) throw notFound(`delivery ${command.deliveryId} has not joined its lane yet`);
        if (entry.done) throw conflict(`delivery ${command.deliveryId} is finished in its lane`);
        const head = laneHead(state);
        if (head?.deliveryId !== entry.deliveryId)
          throw conflict(`delivery ${command.deliveryId} waits for delivery ${head?.deliveryId} in its lane`);
        if (entry.sequence !== null) return [];
        return [
          { type: "LaneReleased", data: { deliveryId: entry.deliveryId, sequence: state.released + 1 } },
        ];
      }
      case "Finish":
        if (!entry || entry.done || (command.round !== undefined && command.round < entry.round)) return [];
        return [{ type: "LaneEntryFinished", data: { deliveryId: entry.deliveryId } }];
      case "Reopen":
        if (!entry || command.round <= entry.round) return [];
        return [{ type: "LaneEntryReopened", data: { deliveryId: entry.deliveryId, round: command.round } }];
    }
  },
};

/** The sequence a released delivery carries. */
export const sequenceOf = (state: LaneState, deliveryId: number): number | null =>
  state.entries.find((entry) => entry.deliveryId === deliveryId)?.sequence ?? null;
