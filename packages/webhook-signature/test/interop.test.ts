import { WebhookVerificationError as TheirVerificationError, Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { signWebhook, verifyStandardSignature, WebhookVerificationError } from "../src/index.ts";

// The `standardwebhooks` package is the reference implementation of Standard Webhooks.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";
const body = JSON.stringify({
  id: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
  type: "order.placed",
  created_at: "2026-03-03T11:00:00.000Z",
  data: { order_id: "1007", status: "placed", note: "Käse, 🧀" },
});

describe("interoperability with the standardwebhooks package", () => {
  it("their signature passes our verification", () => {
    const id = "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c";
    const at = new Date();
    const signature = new Webhook(secret).sign(id, at, body);
    const headers = {
      "webhook-id": id,
      "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
      "webhook-signature": signature,
    };
    expect(() => verifyStandardSignature(secret, Buffer.from(body), headers)).not.toThrow();
    expect(() => verifyStandardSignature(secret, body.replace("1007", "1008"), headers)).toThrow(
      WebhookVerificationError,
    );
  });

  it("our signature passes theirs", () => {
    const headers = signWebhook(secret, body, { id: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c" });
    const standardOnly = {
      "webhook-id": headers["webhook-id"],
      "webhook-timestamp": headers["webhook-timestamp"],
      "webhook-signature": headers["webhook-signature"],
    };
    expect(new Webhook(secret).verify(body, standardOnly)).toMatchObject({ type: "order.placed" });
    expect(() => new Webhook(secret).verify(`${body} `, standardOnly)).toThrow(TheirVerificationError);
    const otherSecret = "whsec_3q2+7w8kVw1cKp0o2Ck9xq9VfEo0Q3B6v7yYlEoNnXc=";
    expect(() => new Webhook(otherSecret).verify(body, standardOnly)).toThrow(TheirVerificationError);
  });

  it("both refuse a timestamp five minutes off", () => {
    const old = Math.floor(Date.now() / 1000) - 301;
    const headers = signWebhook(secret, body, { id: "evt_1", timestampSeconds: old });
    expect(() => new Webhook(secret).verify(body, { ...headers })).toThrow(TheirVerificationError);
    expect(() => verifyStandardSignature(secret, body, headers)).toThrow(/too far/);
  });
});
