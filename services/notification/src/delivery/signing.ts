import { createHmac } from "node:crypto";

/**
 * The headers that authenticate a delivery: `X-Cheese-Signature` keyed with the secret string as
 * shown at registration, and the Standard Webhooks trio keyed with the bytes after `whsec_`.
 * `packages/webhook-signature` verifies both on the receiving side.
 *
 * `secrets` holds the current secret first, then, during a rotation's overlap, the one it
 * replaced: `webhook-signature` then carries one `v1,` signature per secret, space-separated, as
 * Standard Webhooks specifies; `X-Cheese-Signature` has room for one and uses the current secret.
 */
export function deliveryHeaders(input: {
  secrets: readonly string[];
  body: string;
  eventId: string;
  eventType: string;
  deliveryId: number;
  timestampSeconds: number;
}): Record<string, string> {
  const { secrets, body, eventId, timestampSeconds } = input;
  const [current] = secrets;
  if (current === undefined) throw new Error("a delivery needs a signing secret");
  const cheese = createHmac("sha256", Buffer.from(current, "utf8")).update(body, "utf8").digest("hex");
  const standard = secrets.map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    return `v1,${createHmac("sha256", key).update(`${eventId}.${timestampSeconds}.${body}`, "utf8").digest("base64")}`;
  });
  return {
    "content-type": "application/json",
    "user-agent": "CheeseStore-Webhooks/2.0",
    "x-cheese-signature": `sha256=${cheese}`,
    "x-cheese-event": input.eventType,
    "x-cheese-delivery": String(input.deliveryId),
    "webhook-id": eventId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": standard.join(" "),
  };
}
