import type { WebhookEventKind, WebhookRateLimit, WebhookSignatureAlgorithm } from "@cheese/contracts";
import { conflict, type Decider, type DomainEvent, notFound, validationFailed } from "@cheese/service-kit";
import type { SealedAuth } from "../security/receiver-auth.ts";
import type { SealedSecret } from "../security/secrets.ts";

/** A registration as events hold it; the secret only sealed (see security/secrets.ts). */
export interface Registration {
  webhookId: number;
  url: string;
  events: WebhookEventKind[];
  description: string | null;
  secret: SealedSecret;
  /** Which signatures `webhook-signature` carries: `v1` (hmac-sha256) and `v1a` (ed25519). */
  signatureAlgorithms: WebhookSignatureAlgorithm[];
  /**
   * A CEL expression over the envelope: only events it matches are delivered (domain/filter.ts).
   * Absent in registrations made before filters existed, which is the same as null: no filter.
   */
  filter?: string | null;
  /**
   * Ordered lanes: each aggregate's events go out one at a time, in the order they happened
   * (domain/lane.ts). Absent in registrations made before lanes existed: false.
   */
  ordered?: boolean;
  /** At most this many attempts per second (its throttle: `WEBHOOK_THROTTLE` in delivery/throttle-gate.ts); absent or null: no throttle. */
  rateLimit?: WebhookRateLimit | null;
  /** How attempts authenticate to the receiver, its secrets sealed; absent or null: signatures only. */
  auth?: SealedAuth | null;
  createdAt: string;
}

/** What PATCH /webhooks/{id} may change; absent fields stay as they are. */
export interface RegistrationChanges {
  url?: string;
  events?: WebhookEventKind[];
  description?: string | null;
  signatureAlgorithms?: WebhookSignatureAlgorithm[];
  /** null removes the filter. */
  filter?: string | null;
  ordered?: boolean;
  /** null removes the throttle. */
  rateLimit?: WebhookRateLimit | null;
  /** The auth from now on, whole; null removes it. */
  auth?: SealedAuth | null;
}

/**
 * active: deliveries go out. paused: an operator stopped them; they wait. disabled: every attempt
 * failed for the configured period; they wait too. Resuming makes a paused or disabled one active.
 */
export type WebhookStatus = "active" | "paused" | "disabled";

export type WebhookEvent =
  | DomainEvent<"WebhookRegistered", Registration>
  | DomainEvent<"WebhookUpdated", RegistrationChanges & { webhookId: number; updatedAt: string }>
  | DomainEvent<"WebhookPaused", { webhookId: number; at: string; reason: string }>
  | DomainEvent<"WebhookResumed", { webhookId: number; at: string }>
  | DomainEvent<"WebhookDisabled", { webhookId: number; at: string; failingSince: string; reason: string }>
  | DomainEvent<
      "WebhookSecretRotated",
      {
        webhookId: number;
        at: string;
        secret: SealedSecret;
        previousSecret: SealedSecret;
        previousExpiresAt: string;
      }
    >
  | DomainEvent<"WebhookDeleted", { webhookId: number; deletedAt: string }>;

export type WebhookCommand =
  | { type: "Register"; registration: Registration }
  | { type: "Update"; webhookId: number; changes: RegistrationChanges; now: string }
  | { type: "Pause"; webhookId: number; now: string }
  | { type: "Resume"; webhookId: number; now: string }
  /** The new secret (sealed) signs from now on; the one it replaces also signs until `now + overlapMs`. */
  | { type: "RotateSecret"; webhookId: number; secret: SealedSecret; overlapMs: number; now: string }
  /**
   * Disables an active registration whose attempts have all failed since `failingSince`, once
   * that is at least `afterMs` before `now` (the failure that proves it).
   */
  | { type: "Disable"; webhookId: number; failingSince: string; afterMs: number; now: string }
  /**
   * Disables an active registration because a receiver asked to, in the answer to an attempt that
   * failed at `now` (410 Gone, or `webhook-delivery: disable`). An answer from before the
   * registration last became active asks nothing of it.
   */
  | {
      type: "DisableAsAsked";
      webhookId: number;
      steer: "gone" | "disable";
      failingSince: string;
      now: string;
    }
  | { type: "Delete"; webhookId: number; now: string };

export interface LiveWebhook {
  status: WebhookStatus;
  registration: Registration;
  /** When the current status began. */
  statusSince: string;
  /** Why it is paused or disabled; null while active. */
  statusReason: string | null;
  /** Set while disabled for failing: the first failure of the run that disabled it. */
  failingSince: string | null;
  /** The secret a rotation replaced, while it still signs. */
  previousSecret: { secret: SealedSecret; expiresAt: string } | null;
  updatedAt: string;
}

export type WebhookState = { status: "absent" } | { status: "deleted" } | LiveWebhook;

export const webhookStream = (id: number) => `webhook-${id}`;

/** Rotation overlap: 24 h unless the call asks otherwise, at most 7 days. */
export const DEFAULT_ROTATION_OVERLAP_MS = 24 * 3_600_000;
export const MAX_ROTATION_OVERLAP_MS = 7 * 24 * 3_600_000;

export const PAUSED_BY_OPERATOR = "paused by an operator";

const gone = (webhookId: number) => notFound(`webhook ${webhookId} not found`);

const isLive = (state: WebhookState): state is LiveWebhook =>
  state.status === "active" || state.status === "paused" || state.status === "disabled";

const sameKinds = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((kind) => b.includes(kind));

export const webhookDecider: Decider<WebhookState, WebhookCommand, WebhookEvent> = {
  initialState: () => ({ status: "absent" }),
  evolve(state, event) {
    if (event.type === "WebhookRegistered") {
      const at = event.data.createdAt;
      return {
        status: "active",
        registration: event.data,
        statusSince: at,
        statusReason: null,
        failingSince: null,
        previousSecret: null,
        updatedAt: at,
      };
    }
    if (event.type === "WebhookDeleted") return { status: "deleted" };
    if (!isLive(state)) return state;
    switch (event.type) {
      case "WebhookUpdated": {
        const { webhookId: _, updatedAt, ...changes } = event.data;
        return { ...state, registration: { ...state.registration, ...changes }, updatedAt };
      }
      case "WebhookPaused":
        return {
          ...state,
          status: "paused",
          statusSince: event.data.at,
          statusReason: event.data.reason,
          failingSince: null,
          updatedAt: event.data.at,
        };
      case "WebhookResumed":
        return {
          ...state,
          status: "active",
          statusSince: event.data.at,
          statusReason: null,
          failingSince: null,
          updatedAt: event.data.at,
        };
      case "WebhookDisabled":
        return {
          ...state,
          status: "disabled",
          statusSince: event.data.at,
          statusReason: event.data.reason,
          failingSince: event.data.failingSince,
          updatedAt: event.data.at,
        };
      case "WebhookSecretRotated":
        return {
          ...state,
          registration: { ...state.registration, secret: event.data.secret },
          previousSecret: { secret: event.data.previousSecret, expiresAt: event.data.previousExpiresAt },
          updatedAt: event.data.at,
        };
      default:
        return state;
    }
  },
  decide(command, state) {
    if (command.type === "Register") {
      if (state.status !== "absent") throw conflict("webhook already exists");
      return [{ type: "WebhookRegistered", data: command.registration }];
    }
    if (!isLive(state)) throw gone(command.webhookId);
    const { webhookId, now } = command;
    switch (command.type) {
      case "Update": {
        const changes = changed(state.registration, command.changes);
        if (Object.keys(changes).length === 0) return [];
        return [{ type: "WebhookUpdated", data: { webhookId, ...changes, updatedAt: now } }];
      }
      case "Pause":
        if (state.status !== "active") return [];
        return [{ type: "WebhookPaused", data: { webhookId, at: now, reason: PAUSED_BY_OPERATOR } }];
      case "Resume":
        if (state.status === "active") return [];
        return [{ type: "WebhookResumed", data: { webhookId, at: now } }];
      case "RotateSecret": {
        if (command.overlapMs < 0 || command.overlapMs > MAX_ROTATION_OVERLAP_MS) {
          throw validationFailed("request body failed validation", [
            { field: "overlapSeconds", message: "must be 0 to 604800 (7 days)" },
          ]);
        }
        const previousExpiresAt = new Date(Date.parse(now) + command.overlapMs).toISOString();
        return [
          {
            type: "WebhookSecretRotated",
            data: {
              webhookId,
              at: now,
              secret: command.secret,
              previousSecret: state.registration.secret,
              previousExpiresAt,
            },
          },
        ];
      }
      case "Disable": {
        if (state.status !== "active" || !failedLongEnough(command.failingSince, now, command.afterMs))
          return [];
        // A failure from before the registration last became active (resumed) proves nothing.
        if (Date.parse(command.failingSince) < Date.parse(state.statusSince)) return [];
        return [
          {
            type: "WebhookDisabled",
            data: {
              webhookId,
              at: now,
              failingSince: command.failingSince,
              reason: `every delivery attempt failed from ${command.failingSince} to ${now}`,
            },
          },
        ];
      }
      case "DisableAsAsked": {
        if (state.status !== "active" || Date.parse(now) < Date.parse(state.statusSince)) return [];
        const reason =
          command.steer === "gone"
            ? `the receiver answered 410 Gone at ${now}`
            : `the receiver asked to be disabled (webhook-delivery: disable) at ${now}`;
        return [
          {
            type: "WebhookDisabled",
            data: { webhookId, at: now, failingSince: command.failingSince, reason },
          },
        ];
      }
      case "Delete":
        return [{ type: "WebhookDeleted", data: { webhookId, deletedAt: now } }];
    }
  },
};

/** The disabling rule: attempts have failed without a success from `failingSince` for `afterMs` at `now`. */
export function failedLongEnough(failingSince: string, now: string, afterMs: number): boolean {
  return Date.parse(failingSince) + afterMs <= Date.parse(now);
}

/**
 * Since when a registration's attempts have all failed: set by the first failure after a
 * success (or after it became active again), cleared by a success. Folded from the delivery
 * and registration events in global order, so every replica computes the same.
 */
export interface WebhookHealth {
  failingSince: string | null;
}

export function evolveHealth(
  health: WebhookHealth,
  event:
    | { type: "AttemptFailed"; data: { finishedAt: string } }
    | { type: "AttemptSucceeded" }
    | { type: "WebhookResumed" | "WebhookPaused" | "WebhookRegistered" },
): WebhookHealth {
  switch (event.type) {
    case "AttemptFailed":
      return { failingSince: health.failingSince ?? event.data.finishedAt };
    default:
      return { failingSince: null };
  }
}

/** Only the fields that differ from the registration as it stands. */
function changed(registration: Registration, wanted: RegistrationChanges): RegistrationChanges {
  const changes: RegistrationChanges = {};
  if (wanted.url !== undefined && wanted.url !== registration.url) changes.url = wanted.url;
  if (wanted.events !== undefined) {
    const events = [...new Set(wanted.events)];
    if (!sameKinds(events, registration.events)) changes.events = events;
  }
  if (wanted.description !== undefined && wanted.description !== registration.description)
    changes.description = wanted.description;
  if (
    wanted.signatureAlgorithms !== undefined &&
    !sameKinds(wanted.signatureAlgorithms, registration.signatureAlgorithms)
  )
    changes.signatureAlgorithms = wanted.signatureAlgorithms;
  if (wanted.filter !== undefined && wanted.filter !== (registration.filter ?? null))
    changes.filter = wanted.filter;
  if (wanted.ordered !== undefined && wanted.ordered !== (registration.ordered ?? false))
    changes.ordered = wanted.ordered;
  if (
    wanted.rateLimit !== undefined &&
    wanted.rateLimit?.perSecond !== (registration.rateLimit ?? null)?.perSecond
  )
    changes.rateLimit = wanted.rateLimit;
  // Sealed values differ at each sealing: an auth given is recorded, unless both say none.
  if (wanted.auth !== undefined && !(wanted.auth === null && (registration.auth ?? null) === null))
    changes.auth = wanted.auth;
  return changes;
}

/** The secrets that sign an attempt made at `now`: the current one first, then one still in its overlap. */
export function signingSecrets(state: LiveWebhook, now: string): SealedSecret[] {
  const previous = state.previousSecret;
  return previous && Date.parse(previous.expiresAt) > Date.parse(now)
    ? [state.registration.secret, previous.secret]
    : [state.registration.secret];
}
