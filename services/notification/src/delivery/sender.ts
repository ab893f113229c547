import type { KeyObject } from "node:crypto";
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingHttpHeaders,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import {
  ANSWER_BODY_MAX_BYTES,
  type AttemptAnswer,
  type AttemptRequest,
  type WebhookSignatureAlgorithm,
} from "@cheese/contracts";
import { counter, histogram, injectTrace, seriesOf, type TraceContext } from "@cheese/service-kit";
import { signWebhook } from "@cheese/webhook-signature";
import type { AttemptResult } from "../domain/delivery.ts";
import {
  CREDENTIALS_PROBLEM,
  forbiddenAddressReason,
  guardedLookup,
  type Resolver,
} from "../security/address-policy.ts";

/**
 * The headers of a delivery: what it is (`x-cheese-event`, `x-cheese-delivery`) and both
 * signatures, made by `@cheese/webhook-signature`, the package receivers verify them with.
 * `secrets` holds the current secret first, then, during a rotation's overlap, the one it
 * replaced (`signWebhook` says which header carries which); `signatureAlgorithms` says whether
 * `webhook-signature` carries the HMAC (`v1`) and the system's Ed25519 signatures (`v1a`, one per
 * key in `signingKeys`, the current key first).
 */
export function deliveryHeaders(input: {
  secrets: readonly string[];
  signatureAlgorithms: readonly WebhookSignatureAlgorithm[];
  signingKeys: readonly KeyObject[];
  body: string;
  eventId: string;
  eventType: string;
  deliveryId: number;
  timestampSeconds: number;
  /** Its place in its ordered lane (`x-cheese-sequence`), for a delivery that goes out in one. */
  sequence?: number | null;
}): Record<string, string> {
  const signed = signWebhook(input.secrets, input.body, {
    id: input.eventId,
    timestampSeconds: input.timestampSeconds,
    hmac: input.signatureAlgorithms.includes("hmac-sha256"),
    ed25519Keys: input.signatureAlgorithms.includes("ed25519") ? input.signingKeys : [],
  });
  return {
    "content-type": "application/json",
    "user-agent": "CheeseStore-Webhooks/2.0",
    "x-cheese-signature": signed["X-Cheese-Signature"],
    "x-cheese-event": input.eventType,
    "x-cheese-delivery": String(input.deliveryId),
    ...(input.sequence ? { "x-cheese-sequence": String(input.sequence) } : {}),
    "webhook-id": signed["webhook-id"],
    "webhook-timestamp": signed["webhook-timestamp"],
    "webhook-signature": signed["webhook-signature"],
  };
}

export interface SendOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Name resolution for the SSRF guard (tests); the system resolver by default. */
  resolve?: Resolver;
  /** The attempt's trace, sent on as `traceparent` (and `tracestate`). */
  trace?: TraceContext;
  /** Header names (besides Authorization and Cookie) whose values are recorded redacted. */
  credentialHeaders?: readonly string[];
  /** Whether it counts in the attempt metrics (false for an OAuth2 token request). */
  counted?: boolean;
}

/**
 * How an attempt ended: `success` (2xx), `http_error` (any other status, redirects included),
 * `timeout`, `connection_error` (refused, reset, name not resolved, TLS), `refused` (by our own
 * address policy, or a URL that is not one).
 */
type Outcome = "success" | "http_error" | "timeout" | "connection_error" | "refused";

const attempts = counter({
  name: "cheese_webhook_attempts_total",
  help: "Webhook delivery attempts, by outcome (success, http_error, timeout, connection_error, refused)",
  labelNames: ["outcome"],
});
const durations = histogram({
  name: "cheese_webhook_attempt_duration_seconds",
  help: "Time from sending a webhook to its answer (status line and first 4 KiB of the body) or the failure, by outcome",
  labelNames: ["outcome"],
});
const counted = seriesOf((outcome) => ({
  attempts: attempts.labels(outcome),
  duration: durations.labels(outcome),
}));

/**
 * Connections to receivers stay open between attempts, one pool per scheme and origin: a TCP
 * handshake and teardown per attempt (with https a TLS handshake too) was a good part of an
 * attempt's CPU on both sides. Every connection is opened through the address guard (`lookup`),
 * so a reused one was checked when it was opened. An idle one is closed after {@link IDLE_MS}, or
 * sooner when the receiver's `Keep-Alive` hint says so.
 */
const IDLE_MS = 4_000;
const pools = {
  "http:": new HttpAgent({ keepAlive: true, timeout: IDLE_MS }),
  "https:": new HttpsAgent({ keepAlive: true, timeout: IDLE_MS }),
};
/**
 * A receiver's answer body is read for its first {@link ANSWER_BODY_MAX_BYTES} (kept for the
 * operator), the rest drained so its connection can be reused; past this it is closed instead.
 */
const MAX_DRAINED_BYTES = 64 * 1024;

/** Request headers whose value is a credential towards the receiver: recorded as `[redacted]`. */
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie"]);
const REDACTED = "[redacted]";

/**
 * The request as the operator sees it: every header as sent (signatures included, they are
 * worthless without the secret), but a credential's value replaced, for the headers in
 * {@link CREDENTIAL_HEADERS} and any named in `credentialHeaders` (a registration's own auth headers).
 */
export function recordedRequest(
  url: string,
  headers: Record<string, string>,
  credentialHeaders: readonly string[] = [],
): AttemptRequest {
  const secret = new Set([...CREDENTIAL_HEADERS, ...credentialHeaders.map((name) => name.toLowerCase())]);
  return {
    url,
    headers: Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [
        name,
        secret.has(name.toLowerCase()) ? REDACTED : value,
      ]),
    ),
  };
}

function answerHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}

/**
 * One attempt: POST the exact body, succeed only on a 2xx within the deadline. Redirects are not
 * followed (a 3xx is a failure). The deadline covers connecting, sending and the status line of
 * the answer; the answer's headers and the first 4 KiB of its body are kept for the operator
 * (what arrived of them by the deadline), with the request as sent.
 * Unless private URLs are allowed, the address is checked again now, at connect time.
 */
export function sendAttempt(options: SendOptions): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const fail = (error: string, statusCode: number | null = null): AttemptResult => ({
    ok: false,
    statusCode,
    error,
    durationMs: elapsed(),
  });
  const counting = (outcome: Outcome, result: AttemptResult): AttemptResult => {
    if (options.counted === false) return result;
    const series = counted(outcome);
    series.attempts.inc();
    series.duration.observe((performance.now() - started) / 1000);
    return result;
  };
  const refuse = (error: string) => Promise.resolve(counting("refused", fail(error)));

  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    return refuse("the registration's URL is not valid");
  }
  if (url.username || url.password) return Promise.resolve(fail(`refused: URL ${CREDENTIALS_PROBLEM}`));
  if (!options.allowPrivate) {
    if (url.protocol !== "https:") return refuse("refused: URL is not https");
    // Literal addresses never reach `lookup`, so they are judged here.
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const reason = isIP(host) ? forbiddenAddressReason(host) : undefined;
    if (reason) return refuse(`refused: ${reason} address ${host}`);
  }

  return new Promise<AttemptResult>((resolve) => {
    let settled = false;
    const settle = (outcome: Outcome, result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(counting(outcome, result));
    };
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const headers = { ...options.headers, "content-length": String(Buffer.byteLength(options.body)) };
    injectTrace(options.trace, headers);
    const request = recordedRequest(options.url, headers, options.credentialHeaders);
    const finish = (outcome: Outcome, result: AttemptResult) => settle(outcome, { ...result, request });
    let req: ClientRequest;
    /** Set once the status line is in: the deadline then ends the attempt with what arrived. */
    let answered: (() => void) | undefined;
    const timer = setTimeout(() => {
      if (answered) return answered();
      finish("timeout", fail(`timed out after ${options.timeoutMs} ms`));
      req.destroy();
    }, options.timeoutMs);

    const post = (fresh: boolean) => {
      req = send(url, {
        method: "POST",
        headers,
        // A resolver of its own (tests) gets connections of its own, checked by it.
        agent: fresh || options.resolve ? false : pools[url.protocol as keyof typeof pools],
        ...(options.allowPrivate ? {} : { lookup: guardedLookup(options.resolve) }),
      });
      // The status line decides; the first 4 KiB of the body are kept, the rest drained, and a
      // long or slow one closes the connection.
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        const kept: Buffer[] = [];
        let keptBytes = 0;
        let drained = 0;
        answered = () => {
          const body = Buffer.concat(kept).subarray(0, ANSWER_BODY_MAX_BYTES);
          const response: AttemptAnswer = {
            headers: answerHeaders(res.headers),
            body: new TextDecoder().decode(body),
            bodyTruncated: drained > ANSWER_BODY_MAX_BYTES,
          };
          if (status >= 200 && status < 300)
            finish("success", { ok: true, statusCode: status, error: null, durationMs: elapsed(), response });
          else if (status >= 300 && status < 400)
            finish("http_error", { ...fail(`redirect (${status}) not followed`, status), response });
          else
            finish("http_error", {
              ...fail(`receiver answered ${status}`, status),
              ...steering(res.headers),
              response,
            });
        };
        const slow = setTimeout(() => res.destroy(), options.timeoutMs);
        res.on("data", (chunk: Buffer) => {
          drained += chunk.length;
          if (keptBytes <= ANSWER_BODY_MAX_BYTES) {
            kept.push(chunk);
            keptBytes += chunk.length;
          }
          if (drained > ANSWER_BODY_MAX_BYTES) answered?.();
          if (drained > MAX_DRAINED_BYTES) res.destroy();
        });
        res.on("end", () => answered?.());
        res.on("close", () => {
          clearTimeout(slow);
          answered?.();
        });
      });
      req.on("error", (error: NodeJS.ErrnoException) => {
        // The status line was in: the answer stands, with what arrived of its body.
        if (answered) return answered();
        // A kept connection the receiver closed as we reused it: the request never reached it,
        // so it goes again at once on a new connection, within the same attempt.
        if (!settled && req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE"))
          return post(true);
        if (error.name === "ForbiddenAddressError") finish("refused", fail(`refused: ${error.message}`));
        else finish("connection_error", fail(describe(error)));
      });
      req.end(options.body);
    };
    post(false);
  });
}

/** The answer's headers by which a receiver steers its deliveries (the decider says what they mean). */
function steering(headers: IncomingHttpHeaders): Pick<AttemptResult, "retryAfter" | "webhookDelivery"> {
  const retryAfter = headers["retry-after"];
  const webhookDelivery = headers["webhook-delivery"];
  return {
    ...(retryAfter !== undefined ? { retryAfter } : {}),
    ...(typeof webhookDelivery === "string" ? { webhookDelivery } : {}),
  };
}

function describe(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host name does not resolve";
    case "ECONNRESET":
      return "connection reset";
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message;
  }
}
