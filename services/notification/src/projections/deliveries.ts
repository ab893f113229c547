import type { DeliveryAttempt, DeliveryStatus, WebhookEventKind } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import type { DeliveryEvent } from "../domain/delivery.ts";

/**
 * The `deliveries` read model behind GET /webhooks/{id}/deliveries. Attempts are kept in an
 * object keyed `r<round>a<attempt>` so each event can set its own entry without knowing the
 * array position; the query side turns them into a list.
 */
export interface DeliveryDocument extends Document {
  _id: number;
  webhookId: number;
  eventId: string;
  eventType: WebhookEventKind;
  status: DeliveryStatus;
  /** The current round: 0, then n after the nth replay (a replay names the round it found). */
  round: number;
  deadLettered: boolean;
  attempts: Record<string, DeliveryAttempt>;
  nextAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export const DELIVERIES = "deliveries";

/** Raise when projectDelivery writes something else: the read model is rebuilt (architecture.md). */
export const DELIVERIES_VERSION = 2;

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
        $or: [{ createdAt: { $lt: "2025" } }, { createdAt: "2025", _id: { $lt: 9 } }],
      },
      optional: ["status", "createdAt", "_id"],
      sort: { createdAt: -1, _id: -1 },
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

const attemptKey = (round: number, attempt: number) => `attempts.r${round}a${attempt}`;

export async function projectDelivery(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const deliveryId = Number(event.streamName.slice(event.streamName.indexOf("-") + 1));
  const domainEvent = { type: event.type, data: event.data } as DeliveryEvent;
  const update = updateFor(domainEvent);
  if (!update) return;
  const deliveries = readModels.collection<DeliveryDocument>(DELIVERIES);
  await deliveries.upsert(deliveryId, event.revision, await wholeAttempts(deliveries, deliveryId, update));
}

/**
 * The same update with the changes to `attempts.<key>[.<field>]` applied to the stored attempts
 * and set as one top-level field: the embedded read models apply top-level `$set`s directly, but
 * run dotted paths through their query engine, which was a tenth of this service's CPU per
 * delivery. The projection applies a delivery's events one after the other, and an update at an
 * older revision than the stored one is refused, so reading first changes nothing.
 */
async function wholeAttempts(
  deliveries: ReturnType<ReadModelStore["collection"]>,
  deliveryId: number,
  update: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const set = { ...((update.$set as Record<string, unknown> | undefined) ?? {}) };
  const unset = { ...((update.$unset as Record<string, unknown> | undefined) ?? {}) };
  const touched = [...Object.keys(set), ...Object.keys(unset)].filter((k) => k.startsWith("attempts."));
  if (touched.length === 0) return update;
  const stored = (await deliveries.findOne({ _id: deliveryId })) as DeliveryDocument | null;
  const attempts: Record<string, Record<string, unknown>> = structuredClone(stored?.attempts ?? {}) as never;
  for (const [path, value] of Object.entries(set)) {
    if (!path.startsWith("attempts.")) continue;
    delete set[path];
    const [, key, field] = path.split(".") as [string, string, string | undefined];
    if (field === undefined) attempts[key] = structuredClone(value) as Record<string, unknown>;
    else attempts[key] = { ...(attempts[key] ?? {}), [field]: value };
  }
  for (const path of Object.keys(unset)) {
    if (!path.startsWith("attempts.")) continue;
    delete unset[path];
    delete attempts[path.split(".")[1]!];
  }
  return {
    $set: { ...set, attempts },
    ...(Object.keys(unset).length > 0 ? { $unset: unset } : {}),
  };
}

function updateFor(event: DeliveryEvent): Record<string, unknown> | undefined {
  switch (event.type) {
    case "DeliveryCreated": {
      const { deliveryId, webhookId, eventId, eventType, createdAt, dueAt } = event.data;
      return {
        $set: {
          webhookId,
          eventId,
          eventType,
          status: "pending",
          round: 0,
          deadLettered: false,
          attempts: {},
          nextAttemptAt: dueAt,
          createdAt,
          updatedAt: createdAt,
          id: deliveryId,
        },
      };
    }
    case "AttemptStarted": {
      const { round, attempt, startedAt } = event.data;
      const entry: DeliveryAttempt = {
        attempt,
        round,
        startedAt,
        outcome: "in_flight",
        statusCode: null,
        error: null,
        durationMs: null,
      };
      return {
        $set: {
          status: "attempting",
          nextAttemptAt: null,
          updatedAt: startedAt,
          [attemptKey(round, attempt)]: entry,
        },
      };
    }
    case "AttemptSucceeded": {
      const { round, attempt, statusCode, durationMs, finishedAt } = event.data;
      const key = attemptKey(round, attempt);
      return {
        $set: {
          status: "delivered",
          updatedAt: finishedAt,
          [`${key}.outcome`]: "succeeded",
          [`${key}.statusCode`]: statusCode,
          [`${key}.durationMs`]: durationMs,
        },
      };
    }
    case "AttemptFailed": {
      const { round, attempt, outcome, statusCode, error, durationMs, finishedAt, nextAttemptAt } =
        event.data;
      const key = attemptKey(round, attempt);
      return {
        $set: {
          status: nextAttemptAt ? "retry_scheduled" : "dead_lettered",
          deadLettered: nextAttemptAt === null,
          nextAttemptAt,
          updatedAt: finishedAt,
          [`${key}.outcome`]: outcome,
          [`${key}.statusCode`]: statusCode,
          [`${key}.error`]: error,
          [`${key}.durationMs`]: durationMs,
        },
      };
    }
    case "AttemptWithdrawn": {
      const { round, attempt, at } = event.data;
      return {
        $set: { status: attempt > 1 ? "retry_scheduled" : "pending", nextAttemptAt: at, updatedAt: at },
        $unset: { [attemptKey(round, attempt)]: "" },
      };
    }
    case "DeliveryDeadLettered":
      return {
        $set: { status: "dead_lettered", deadLettered: true, nextAttemptAt: null, updatedAt: event.data.at },
      };
    case "DeliveryReplayed":
      return {
        $set: {
          status: "pending",
          round: event.data.round,
          deadLettered: false,
          nextAttemptAt: event.data.dueAt,
          updatedAt: event.data.at,
        },
      };
    case "DeliveryCancelled":
      return {
        $set: { status: "cancelled", deadLettered: false, nextAttemptAt: null, updatedAt: event.data.at },
      };
    default:
      return undefined;
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
