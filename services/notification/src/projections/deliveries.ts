import type { DeliveryAttemptDetail, DeliveryStatus, WebhookEventKind } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import { type DeliveryEvent, type DeliveryState, deliveryDecider } from "../domain/delivery.ts";

/**
 * The `deliveries` read model behind GET /webhooks/{id}/deliveries (and one delivery's detail).
 * Attempts are kept in an object keyed `r<round>a<attempt>` so each event can set its own entry
 * without knowing the array position; the query side turns them into a list. Each attempt keeps
 * its request's URL and headers and the receiver's answer (at most 4 KiB of its body); the
 * request body, the same in every attempt, is kept once per delivery.
 */
export interface DeliveryDocument extends Document {
  _id: number;
  webhookId: number;
  eventId: string;
  eventType: WebhookEventKind;
  /** The request body of every attempt: the event envelope as sent. */
  body: string;
  status: DeliveryStatus;
  /** The current round: 0, then n after the nth replay (a replay names the round it found). */
  round: number;
  /** Attempts made in the current round, and when the one in flight (if any) started. */
  attempt: number;
  startedAt: string | null;
  deadLettered: boolean;
  attempts: Record<string, DeliveryAttemptDetail>;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export const DELIVERIES = "deliveries";

/** Raise when projectDelivery writes something else: the read model is rebuilt (architecture.md). */
export const DELIVERIES_VERSION = 5;

/** The `deliveries` collection's indexes and every query run on it (handlers/). */
export const deliveriesCollection: CollectionDefinition = {
  name: DELIVERIES,
  indexes: [
    { keys: { webhookId: 1, createdAt: -1, _id: -1 } },
    { keys: { webhookId: 1, status: 1, createdAt: 1, _id: 1 } },
    { keys: { status: 1 } },
  ],
  queries: [
    {
      name: "GET /webhooks/{id}/deliveries, newest first",
      filter: {
        webhookId: 1,
        status: { $in: ["failed"] },
        eventType: { $in: ["order.placed"] },
        $or: [{ createdAt: { $lt: "2025" } }, { createdAt: "2025", _id: { $lt: 9 } }],
      },
      optional: ["status", "eventType", "createdAt", "_id"],
      sort: { createdAt: -1, _id: -1 },
    },
    {
      name: "GET /webhooks/{id}/deliveries/{deliveryId} and its resend: one delivery",
      filter: { _id: 1, webhookId: 1 },
    },
    {
      name: "deleting a registration: its deliveries still waiting",
      filter: { webhookId: 1, status: { $in: ["pending", "retry_scheduled", "dead_lettered"] } },
    },
    {
      name: "replay: a registration's deliveries of some statuses in a time window, oldest first",
      filter: { webhookId: 1, status: { $in: ["dead_lettered"] }, createdAt: { $gte: "2025", $lt: "2026" } },
      optional: ["createdAt"],
      sort: { createdAt: 1, _id: 1 },
    },
    {
      name: "/metrics: how many deliveries are dead letters (cheese_webhook_dead_letters)",
      filter: { status: "dead_lettered" },
    },
    {
      name: "replay: how many deliveries it would start again",
      filter: { webhookId: 1, status: { $in: ["dead_lettered"] }, createdAt: { $gte: "2025", $lt: "2026" } },
      optional: ["createdAt"],
    },
  ],
};

const attemptKey = (round: number, attempt: number) => `r${round}a${attempt}`;

/**
 * The delivery's state is folded by the decider's `evolve`, the one fold of a delivery (the
 * scheduler uses it too), from the state the document holds; the projection adds only what the
 * state does not keep: the log of attempts and when the delivery last changed. The attempts are
 * set whole as one top-level field: the embedded read models apply top-level `$set`s directly,
 * but run dotted paths through their query engine, which was a tenth of this service's CPU per
 * delivery. The projection applies a delivery's events one after the other, and an update at an
 * older revision than the stored one is refused, so reading first changes nothing.
 */
export async function projectDelivery(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const deliveryId = Number(event.streamName.slice(event.streamName.indexOf("-") + 1));
  const domainEvent = { type: event.type, data: event.data } as DeliveryEvent;
  const changedAt = changeTime(domainEvent);
  if (changedAt === undefined) return;
  const deliveries = readModels.collection<DeliveryDocument>(DELIVERIES);
  const stored =
    domainEvent.type === "DeliveryCreated" ? null : await deliveries.findOne({ _id: deliveryId });
  const state = deliveryDecider.evolve(stateOf(stored), domainEvent);
  if (state.status === "absent") return;
  const { webhookId, eventId, eventType, body, createdAt, status, round, attempt, dueAt, startedAt } = state;
  await deliveries.upsert(deliveryId, event.revision, {
    $set: {
      id: deliveryId,
      webhookId,
      eventId,
      eventType,
      body,
      createdAt,
      status,
      round,
      attempt,
      startedAt,
      deadLettered: status === "dead_lettered",
      nextAttemptAt: dueAt,
      attempts: attemptsAfter(stored?.attempts ?? {}, domainEvent),
      updatedAt: changedAt,
    },
  });
}

/** The delivery's state as the document holds it. */
function stateOf(document: DeliveryDocument | null): DeliveryState {
  if (!document) return deliveryDecider.initialState();
  const {
    _id,
    webhookId,
    eventId,
    eventType,
    body,
    createdAt,
    status,
    round,
    attempt,
    nextAttemptAt,
    startedAt,
  } = document;
  return {
    deliveryId: _id,
    webhookId,
    eventId,
    eventType,
    body,
    createdAt,
    status,
    round,
    attempt,
    dueAt: nextAttemptAt,
    startedAt,
  };
}

/** When the event changed the delivery; undefined for an event the projection does not know. */
function changeTime(event: DeliveryEvent): string | undefined {
  switch (event.type) {
    case "DeliveryCreated":
      return event.data.createdAt;
    case "AttemptStarted":
      return event.data.startedAt;
    case "AttemptSucceeded":
    case "AttemptFailed":
      return event.data.finishedAt;
    case "AttemptWithdrawn":
    case "DeliveryDeadLettered":
    case "DeliveryReplayed":
    case "DeliveryCancelled":
      return event.data.at;
    default:
      return undefined;
  }
}

/** The log of attempts after the event: each attempt's entry, from its start to its result. */
function attemptsAfter(
  stored: Record<string, DeliveryAttemptDetail>,
  event: DeliveryEvent,
): Record<string, DeliveryAttemptDetail> {
  switch (event.type) {
    case "AttemptStarted": {
      const { round, attempt, startedAt, sequence } = event.data;
      const entry: DeliveryAttemptDetail = {
        attempt,
        round,
        startedAt,
        ...(sequence === undefined ? {} : { sequence }),
        outcome: "in_flight",
        statusCode: null,
        error: null,
        durationMs: null,
        request: null,
        response: null,
      };
      return { ...stored, [attemptKey(round, attempt)]: entry };
    }
    case "AttemptSucceeded": {
      const { round, attempt, statusCode, durationMs, request = null, response = null } = event.data;
      const key = attemptKey(round, attempt);
      return {
        ...stored,
        [key]: { ...stored[key]!, outcome: "succeeded", statusCode, durationMs, request, response },
      };
    }
    case "AttemptFailed": {
      const {
        round,
        attempt,
        outcome,
        statusCode,
        error,
        durationMs,
        request = null,
        response = null,
        retryAfter,
        steer,
      } = event.data;
      const key = attemptKey(round, attempt);
      const asked = { ...(retryAfter ? { retryAfter } : {}), ...(steer ? { steer } : {}) };
      return {
        ...stored,
        [key]: { ...stored[key]!, outcome, statusCode, error, durationMs, request, response, ...asked },
      };
    }
    case "AttemptWithdrawn": {
      const { [attemptKey(event.data.round, event.data.attempt)]: _withdrawn, ...rest } = stored;
      return rest;
    }
    default:
      return stored;
  }
}

/** How the delivery history is projected: `main.ts` starts it, and the tests that need it alike. */
export const deliveriesProjection = {
  name: DELIVERIES,
  version: DELIVERIES_VERSION,
  collections: [deliveriesCollection],
  categories: ["delivery"],
  apply: projectDelivery,
};
