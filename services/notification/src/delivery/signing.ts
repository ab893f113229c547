import { createHmac } from "node:crypto";

/**
 * The headers that authenticate a delivery (decisions.md "Webhooks"): `X-Cheese-Signature` keyed
 * with the secret string as shown at registration, and the Standard Webhooks trio keyed with the
 * bytes after `whsec_`. `packages/webhook-signature` verifies both on the receiving side.
 */
export function deliveryHeaders(input: {
  secret: string;
  body: string;
  eventId: string;
  eventType: string;
  deliveryId: number;
  timestampSeconds: number;
}): Record<string, string> {
  const { secret, body, eventId, timestampSeconds } = input;
  const cheese = createHmac("sha256", Buffer.from(secret, "utf8")).update(body, "utf8").digest("hex");
  const standardKey = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const standard = createHmac("sha256", standardKey)
    .update(`${eventId}.${timestampSeconds}.${body}`, "utf8")
    .digest("base64");
  return {
    "content-type": "application/json",
    "user-agent": "CheeseStore-Webhooks/2.0",
    "x-cheese-signature": `sha256=${cheese}`,
    "x-cheese-event": input.eventType,
    "x-cheese-delivery": String(input.deliveryId),
    "webhook-id": eventId,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": `v1,${standard}`,
  };
}
