import {
  type Clock,
  endSpan,
  extractTrace,
  SpanKind,
  startSpan,
  systemClock,
  tracerFor,
} from "@cheese/service-kit";
import type { AttemptResult, DeliveryState } from "../domain/delivery.ts";
import { type LiveWebhook, signingSecrets } from "../domain/webhook.ts";
import type { Resolver } from "../security/address-policy.ts";
import type { SealedSecret, SecretBox } from "../security/secrets.ts";
import type { WebhookSigningKeys } from "../security/signing-keys.ts";
import { type AttemptAuth, NO_RECEIVER_AUTH, ReceiverAuth, TokenError } from "./attempt-auth.ts";
import { deliveryHeaders, sendAttempt } from "./sender.ts";
import type { TraceCarrier } from "./snapshot.ts";

export interface ReceiverCallsOptions {
  secrets: SecretBox;
  /** The system's Ed25519 keys, for the registrations that ask for v1a signatures. */
  signingKeys: Pick<WebhookSigningKeys, "signing">;
  timeoutMs: number;
  allowPrivate: boolean;
  resolve?: Resolver;
  /** The signatures' timestamp, which signing secrets are current, and the auth's token expiry. */
  clock?: Clock;
}

/** One claimed attempt, as the scheduler hands it over. */
export interface AttemptCall {
  webhookId: number;
  deliveryId: number;
  /** The registration as read after the claim. */
  registration: LiveWebhook;
  delivery: Exclude<DeliveryState, { status: "absent" }>;
  /** Its place in its ordered lane, for a delivery that goes out in one. */
  turn?: { sequence: number } | undefined;
  /** The trace the attempt is a span of (the delivery's creation or replay). */
  trace?: TraceCarrier | undefined;
  /** Waited for before a second request (a fresh token after a 401): the registration's throttle. */
  beforeAgain: () => Promise<void>;
}

/**
 * An attempt's request to its receiver, and nothing of the schedule: its signed headers (the
 * registration's current secrets, opened once per process, and the system's Ed25519 keys), the
 * receiver's auth (`ReceiverAuth`: static headers or an OAuth2 token, one more request with a
 * fresh token after a 401), and the attempt's client span. What comes back is the attempt's
 * result; a token that could not be had is a failed attempt, not an error.
 */
export class ReceiverCalls {
  private readonly openedSecrets = new Map<string, string>();
  private readonly auth: ReceiverAuth;
  private readonly clock: Clock;

  constructor(private readonly options: ReceiverCallsOptions) {
    this.clock = options.clock ?? systemClock;
    this.auth = new ReceiverAuth({
      open: (sealed) => this.open(sealed),
      timeoutMs: options.timeoutMs,
      allowPrivate: options.allowPrivate,
      ...(options.resolve ? { resolve: options.resolve } : {}),
      clock: this.clock,
    });
  }

  async call({
    webhookId,
    deliveryId,
    registration,
    delivery,
    turn,
    trace: carried,
    beforeAgain,
  }: AttemptCall): Promise<AttemptResult> {
    const { signatureAlgorithms } = registration.registration;
    const headers = deliveryHeaders({
      secrets: this.secretsOf(registration),
      signatureAlgorithms,
      signingKeys: signatureAlgorithms.includes("ed25519") ? await this.options.signingKeys.signing() : [],
      body: delivery.body,
      eventId: delivery.eventId,
      eventType: delivery.eventType,
      deliveryId,
      timestampSeconds: Math.floor(this.clock.now().getTime() / 1000),
      ...(turn ? { sequence: turn.sequence } : {}),
    });
    const { span, context: trace } = startSpan(
      tracerFor("notification"),
      `POST webhook ${delivery.eventType}`,
      SpanKind.CLIENT,
      extractTrace(carried ?? {}),
    );
    const send = (auth: AttemptAuth, authHeaders: Record<string, string>) =>
      sendAttempt({
        url: registration.registration.url,
        // The delivery's own headers win; a registration's static headers cannot name them.
        headers: { ...authHeaders, ...headers },
        body: delivery.body,
        timeoutMs: this.options.timeoutMs,
        allowPrivate: this.options.allowPrivate,
        ...(this.options.resolve ? { resolve: this.options.resolve } : {}),
        trace,
        credentialHeaders: auth.credentialHeaders,
      });
    let result: AttemptResult;
    try {
      const sealed = registration.registration.auth;
      const auth = sealed ? await this.auth.forAttempt(webhookId, sealed) : NO_RECEIVER_AUTH;
      result = await send(auth, auth.headers);
      // A 401 may be a token the receiver no longer takes: one more request, with a new one.
      if (result.statusCode === 401 && auth.refresh) {
        const fresh = await auth.refresh();
        await beforeAgain();
        result = await send(auth, fresh);
      }
    } catch (error) {
      if (!(error instanceof TokenError)) throw error;
      result = { ok: false, statusCode: null, error: `no OAuth2 token: ${error.message}`, durationMs: 0 };
    }
    if (span.isRecording()) {
      span.setAttributes({
        "http.request.method": "POST",
        "cheese.webhook.id": webhookId,
        "cheese.delivery.id": deliveryId,
        "cheese.delivery.attempt": delivery.attempt,
        "cheese.webhook.event_type": delivery.eventType,
        ...(result.statusCode !== null ? { "http.response.status_code": result.statusCode } : {}),
      });
    }
    endSpan(span, result.ok ? undefined : (result.error ?? "failed"));
    return result;
  }

  /** The secrets that sign now, opened (each sealed secret is opened once per process). */
  private secretsOf(registration: LiveWebhook): string[] {
    return signingSecrets(registration, this.clock.now().toISOString()).map((sealed) => this.open(sealed));
  }

  private open(sealed: SealedSecret): string {
    let secret = this.openedSecrets.get(sealed.data);
    if (secret === undefined) {
      secret = this.options.secrets.open(sealed);
      this.openedSecrets.set(sealed.data, secret);
    }
    return secret;
  }
}
