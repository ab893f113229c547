import type { AttemptAnswer, AttemptRequest, WebhookEventKind } from "@cheese/contracts";
import { conflict, type Decider, type DomainEvent, notFound } from "@cheese/service-kit";

/**
 * One event on its way to one registration (spec "Webhook delivery" states). Every change is an
 * append with the expected revision, so the append itself is the claim: of two replicas that
 * find an attempt due, exactly one records AttemptStarted; the other's append fails and it
 * moves on. The attempt is claimed before the request is sent and its result recorded after.
 */
export interface DeliveryFacts {
  deliveryId: number;
  webhookId: number;
  eventId: string;
  eventType: WebhookEventKind;
  body: string;
  createdAt: string;
  /**
   * The ordered lane it goes out in (domain/lane.ts: its stream), when its registration was
   * ordered as its event was recorded; each attempt waits to be the lane's head.
   */
  lane?: string;
}

export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** What was sent (URL and headers, credentials redacted); the body is the delivery's own. */
  request?: AttemptRequest;
  /** The receiver's answer: status line headers and the first 4 KiB of its body. */
  response?: AttemptAnswer;
  /** The answer's `Retry-After` header, as sent (absent when there was none). */
  retryAfter?: string;
  /** The answer's `webhook-delivery` header, as sent (absent when there was none). */
  webhookDelivery?: string;
}

/**
 * What an attempt sent and got back, recorded with its result for the operator. Optional: events
 * recorded before it existed (and abandoned attempts) have none (docs/architecture.md "Changing an
 * event's shape": an optional new field needs no upcaster).
 */
type AttemptDetail = { request?: AttemptRequest; response?: AttemptAnswer };

/**
 * What a receiver asked for in a failed attempt's answer: `gone` (410) and `disable`
 * (`webhook-delivery: disable`) disable its registration, `abort` (`webhook-delivery: abort`)
 * dead-letters the delivery at once.
 */
export type Steer = "gone" | "disable" | "abort";

/** Retry delays: `delays[i]` is the wait before attempt i + 1; their count is the number of attempts. */
export type RetryDelays = readonly number[];

export const OUTCOME_UNKNOWN =
  "outcome unknown: the notification process stopped during the attempt; counted as failed";

type AttemptKey = { round: number; attempt: number };

export type DeliveryEvent =
  | DomainEvent<"DeliveryCreated", DeliveryFacts & { dueAt: string }>
  /** `sequence`: the attempt's place in its ordered lane (`X-Cheese-Sequence`); absent outside a lane. */
  | DomainEvent<"AttemptStarted", AttemptKey & { startedAt: string; sequence?: number }>
  | DomainEvent<
      "AttemptSucceeded",
      AttemptKey & { statusCode: number; durationMs: number; finishedAt: string } & AttemptDetail
    >
  | DomainEvent<
      "AttemptFailed",
      AttemptKey & {
        outcome: "failed" | "unknown";
        statusCode: number | null;
        error: string | null;
        durationMs: number | null;
        finishedAt: string;
        nextAttemptAt: string | null;
        /** The time a 429 or 503 answer's `Retry-After` asked the next attempt not to come before. */
        retryAfter?: string;
        /** What the receiver asked for (see {@link Steer}). */
        steer?: Steer;
      } & AttemptDetail
    >
  /** A claimed attempt not sent after all: its registration was paused (or deleted) meanwhile. */
  | DomainEvent<"AttemptWithdrawn", AttemptKey & { at: string; reason: string }>
  | DomainEvent<"DeliveryDeadLettered", { round: number; at: string }>
  | DomainEvent<"DeliveryReplayed", { round: number; at: string; dueAt: string }>
  | DomainEvent<"DeliveryCancelled", { reason: string; at: string }>;

export type DeliveryCommand =
  /**
   * `startAt`: the creating process claims the first attempt in the same append (its scheduler
   * holds a slot for it), when the attempt is due by then; otherwise the delivery waits to be
   * claimed as any other.
   */
  | { type: "Create"; facts: DeliveryFacts; delays: RetryDelays; startAt?: string }
  /** `sequence`: the place its lane released it at (domain/lane.ts), for a delivery in one. */
  | { type: "StartAttempt"; now: string; sequence?: number }
  | {
      type: "RecordResult";
      round: number;
      attempt: number;
      result: AttemptResult;
      now: string;
      delays: RetryDelays;
      /** The most a `Retry-After` may defer the next attempt by. */
      retryAfterMaxMs: number;
    }
  | { type: "Abandon"; now: string; leaseMs: number; delays: RetryDelays }
  /** Gives a claimed attempt back unsent; it counts for nothing and is due again at once. */
  | { type: "Withdraw"; round: number; attempt: number; now: string; reason: string }
  /**
   * Starts a finished delivery again as a new round, if it is still the round the caller found
   * finished (`round`); one in another status, or already replayed since, is left alone.
   */
  | { type: "Replay"; now: string; statuses: readonly ReplayableStatus[]; round: number }
  /**
   * The operator starts one finished delivery again (POST …/resend): like a replay of a delivered
   * or dead-lettered one, but a delivery still under way (or cancelled) is a conflict, not a no-op.
   */
  | { type: "Resend"; now: string }
  | { type: "Cancel"; now: string; reason: string };

export type DeliveryStatus =
  | "pending"
  | "attempting"
  | "retry_scheduled"
  | "delivered"
  | "dead_lettered"
  | "cancelled";

/** The statuses a replay may start again: finished ones (those still waiting are on their way). */
export const replayableStatuses = ["dead_lettered", "delivered"] as const;
export type ReplayableStatus = (typeof replayableStatuses)[number];

export type DeliveryState =
  | { status: "absent" }
  | (DeliveryFacts & {
      status: DeliveryStatus;
      round: number;
      /** Attempts made in the current round. */
      attempt: number;
      dueAt: string | null;
      startedAt: string | null;
    });

export const deliveryStream = (id: number) => `delivery-${id}`;

/** A delivery that waits for nothing more: delivered, cancelled, or in the dead letter queue until a replay. */
export const isFinished = (state: DeliveryState): boolean =>
  state.status === "delivered" || state.status === "cancelled" || state.status === "dead_lettered";

const at = (iso: string, plusMs: number) => new Date(Date.parse(iso) + plusMs).toISOString();

export const deliveryDecider: Decider<DeliveryState, DeliveryCommand, DeliveryEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(state, event) {
    if (event.type === "DeliveryCreated") {
      const { dueAt, ...facts } = event.data;
      return { ...facts, status: "pending", round: 0, attempt: 0, dueAt, startedAt: null };
    }
    if (state.status === "absent") return state;
    switch (event.type) {
      case "AttemptStarted":
        return {
          ...state,
          status: "attempting",
          attempt: event.data.attempt,
          startedAt: event.data.startedAt,
          dueAt: null,
        };
      case "AttemptSucceeded":
        return { ...state, status: "delivered", startedAt: null };
      case "AttemptFailed":
        return event.data.nextAttemptAt
          ? { ...state, status: "retry_scheduled", dueAt: event.data.nextAttemptAt, startedAt: null }
          : { ...state, status: "dead_lettered", dueAt: null, startedAt: null };
      case "AttemptWithdrawn":
        return {
          ...state,
          status: event.data.attempt > 1 ? "retry_scheduled" : "pending",
          attempt: event.data.attempt - 1,
          dueAt: event.data.at,
          startedAt: null,
        };
      case "DeliveryDeadLettered":
        return { ...state, status: "dead_lettered", dueAt: null, startedAt: null };
      case "DeliveryReplayed":
        return { ...state, status: "pending", round: event.data.round, attempt: 0, dueAt: event.data.dueAt };
      case "DeliveryCancelled":
        return { ...state, status: "cancelled", dueAt: null, startedAt: null };
      default:
        return state;
    }
  },
  decide(command, state) {
    if (command.type === "Create") {
      if (state.status !== "absent") return []; // idempotent: the fan-out may run twice
      const delay = command.delays[0] ?? 0;
      const created: DeliveryEvent = {
        type: "DeliveryCreated",
        data: { ...command.facts, dueAt: at(command.facts.createdAt, delay) },
      };
      const { startAt } = command;
      if (startAt === undefined || Date.parse(created.data.dueAt) > Date.parse(startAt)) return [created];
      const started = deliveryDecider.decide(
        { type: "StartAttempt", now: startAt },
        deliveryDecider.evolve(state, created),
      );
      return [created, ...started];
    }
    if (state.status === "absent") throw notFound("delivery not found");
    switch (command.type) {
      case "StartAttempt":
        if ((state.status !== "pending" && state.status !== "retry_scheduled") || !state.dueAt) {
          throw conflict(`delivery is ${state.status}`);
        }
        if (Date.parse(state.dueAt) > Date.parse(command.now)) throw conflict("not due yet");
        return [
          {
            type: "AttemptStarted",
            data: {
              round: state.round,
              attempt: state.attempt + 1,
              startedAt: command.now,
              ...(command.sequence === undefined ? {} : { sequence: command.sequence }),
            },
          },
        ];
      case "RecordResult": {
        const current =
          state.status === "attempting" && state.round === command.round && state.attempt === command.attempt;
        if (!current) throw conflict("attempt is no longer in flight");
        const { result } = command;
        const key = { round: state.round, attempt: state.attempt };
        if (result.ok && result.statusCode !== null) {
          return [
            {
              type: "AttemptSucceeded",
              data: {
                ...key,
                statusCode: result.statusCode,
                durationMs: result.durationMs,
                finishedAt: command.now,
                ...detailOf(result),
              },
            },
          ];
        }
        const asked = askedFor(result, command.now);
        return failed(
          state.attempt,
          key,
          command.now,
          command.delays,
          {
            outcome: "failed",
            statusCode: result.statusCode,
            error: result.error,
            durationMs: result.durationMs,
            ...(asked.retryAfter ? { retryAfter: asked.retryAfter } : {}),
            ...(asked.steer ? { steer: asked.steer } : {}),
            ...detailOf(result),
          },
          command.retryAfterMaxMs,
        );
      }
      case "Abandon": {
        const expired =
          state.status === "attempting" &&
          state.startedAt !== null &&
          Date.parse(state.startedAt) + command.leaseMs <= Date.parse(command.now);
        if (!expired) throw conflict("no abandoned attempt");
        return failed(
          state.attempt,
          { round: state.round, attempt: state.attempt },
          command.now,
          command.delays,
          {
            outcome: "unknown",
            statusCode: null,
            error: OUTCOME_UNKNOWN,
            durationMs: null,
          },
          0, // no answer, nothing asked
        );
      }
      case "Withdraw": {
        const current =
          state.status === "attempting" && state.round === command.round && state.attempt === command.attempt;
        if (!current) throw conflict("attempt is no longer in flight");
        const { round, attempt, now: at, reason } = command;
        return [{ type: "AttemptWithdrawn", data: { round, attempt, at, reason } }];
      }
      case "Replay":
        if (!(command.statuses as readonly string[]).includes(state.status)) return [];
        // A replay acts on the round it found finished. Another replay of the same delivery may
        // have started (and finished) a later round since: that one is not this call's to redo.
        if (state.round !== command.round) return [];
        return [
          { type: "DeliveryReplayed", data: { round: state.round + 1, at: command.now, dueAt: command.now } },
        ];
      case "Resend":
        if (!(replayableStatuses as readonly string[]).includes(state.status))
          throw conflict(`delivery is ${state.status}: only a delivered or dead-lettered one can be resent`);
        return [
          { type: "DeliveryReplayed", data: { round: state.round + 1, at: command.now, dueAt: command.now } },
        ];
      case "Cancel":
        if (state.status === "delivered" || state.status === "cancelled") return [];
        return [{ type: "DeliveryCancelled", data: { reason: command.reason, at: command.now } }];
    }
  },
};

/** A failed attempt: the next one per the delays, or the dead letter queue after the last. */
function failed(
  attempt: number,
  key: AttemptKey,
  now: string,
  delays: RetryDelays,
  detail: {
    outcome: "failed" | "unknown";
    statusCode: number | null;
    error: string | null;
    durationMs: number | null;
    retryAfter?: string;
    steer?: Steer;
  } & AttemptDetail,
  retryAfterMaxMs: number,
): DeliveryEvent[] {
  const scheduled = detail.steer === "abort" ? undefined : delays[attempt];
  if (scheduled !== undefined) {
    // The receiver's Retry-After defers the next attempt (up to the cap), never brings it forward.
    const asked = detail.retryAfter ? Date.parse(detail.retryAfter) - Date.parse(now) : 0;
    const next = Math.max(scheduled, Math.min(asked, retryAfterMaxMs));
    return [
      { type: "AttemptFailed", data: { ...key, ...detail, finishedAt: now, nextAttemptAt: at(now, next) } },
    ];
  }
  return [
    { type: "AttemptFailed", data: { ...key, ...detail, finishedAt: now, nextAttemptAt: null } },
    { type: "DeliveryDeadLettered", data: { round: key.round, at: now } },
  ];
}

/** The request and answer of a result, when it has them (absent fields stay absent in the event). */
const detailOf = ({ request, response }: AttemptResult): AttemptDetail => ({
  ...(request ? { request } : {}),
  ...(response ? { response } : {}),
});

/**
 * What a failed attempt's answer asks for: a 429 or 503 with `Retry-After` (delta-seconds, or an
 * HTTP date) the time before which the next attempt should not come; a 410 Gone or a
 * `webhook-delivery: disable | abort` header a {@link Steer}. Anything else, or a header that
 * does not parse, asks nothing.
 */
function askedFor(result: AttemptResult, now: string): { retryAfter?: string; steer?: Steer } {
  if (result.ok) return {};
  const asked: { retryAfter?: string; steer?: Steer } = {};
  if ((result.statusCode === 429 || result.statusCode === 503) && result.retryAfter !== undefined) {
    const time = retryAfterTime(result.retryAfter, Date.parse(now));
    if (time !== undefined) asked.retryAfter = new Date(time).toISOString();
  }
  const steer = steerOf(result);
  if (steer) asked.steer = steer;
  return asked;
}

/** What a failed attempt's answer asks of the registration or the delivery ("Receivers steer"), if anything. */
export function steerOf(result: AttemptResult): Steer | undefined {
  if (result.ok) return undefined;
  if (result.statusCode === 410) return "gone";
  const header = result.webhookDelivery?.trim().toLowerCase();
  return header === "disable" || header === "abort" ? header : undefined;
}

const YEAR_SECONDS = 365 * 24 * 3600;

/** RFC 9110 `Retry-After`: delta-seconds, or an HTTP date (`Date.parse` reads IMF-fixdate and the obsolete forms). */
function retryAfterTime(value: string, nowMs: number): number | undefined {
  const text = value.trim();
  // Past a year it is capped anyway; bounded so that a huge number stays a valid date.
  if (/^\d+$/.test(text)) return nowMs + Math.min(Number(text), YEAR_SECONDS) * 1000;
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : time;
}
