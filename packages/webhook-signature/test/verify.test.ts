import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  signWebhook,
  standardSigningKey,
  verifyCheeseSignature,
  verifyStandardSignature,
  verifyWebhook,
  WebhookVerificationError,
} from "../src/index.ts";

// The published Standard Webhooks / Svix test vector.
const vector = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const atVectorTime = { now: () => Number(vector.timestamp) * 1000 };

describe("Standard Webhooks signature", () => {
  const headers = {
    "webhook-id": vector.id,
    "webhook-timestamp": vector.timestamp,
    "webhook-signature": vector.signature,
  };

  it("accepts the published test vector", () => {
    expect(() => verifyStandardSignature(vector.secret, vector.body, headers, atVectorTime)).not.toThrow();
  });

  it("accepts a fetch Headers object and a list of signatures where one matches", () => {
    const fetchHeaders = new Headers({ ...headers, "webhook-signature": `v1,bm9wZQ== ${vector.signature}` });
    expect(() =>
      verifyStandardSignature(vector.secret, Buffer.from(vector.body), fetchHeaders, atVectorTime),
    ).not.toThrow();
  });

  it("refuses a changed body, id or timestamp", () => {
    const check = (body: string, h: Record<string, string>) => () =>
      verifyStandardSignature(vector.secret, body, h, { now: () => 1614265330_000 });
    expect(check('{"test": 2432232315}', headers)).toThrow(WebhookVerificationError);
    expect(check(vector.body, { ...headers, "webhook-id": "msg_other" })).toThrow(/no webhook-signature/);
    expect(check(vector.body, { ...headers, "webhook-timestamp": "1614265331" })).toThrow(
      /no webhook-signature/,
    );
  });

  it("refuses a timestamp outside the tolerance (replays), and missing headers", () => {
    const later = { now: () => (Number(vector.timestamp) + 301) * 1000 };
    expect(() => verifyStandardSignature(vector.secret, vector.body, headers, later)).toThrow(/too far/);
    expect(() =>
      verifyStandardSignature(vector.secret, vector.body, { "webhook-id": vector.id }, atVectorTime),
    ).toThrow(/missing/);
  });

  it("keys the HMAC with the base64-decoded part after whsec_", () => {
    expect(standardSigningKey(vector.secret)).toEqual(
      Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64"),
    );
  });
});

describe("X-Cheese-Signature", () => {
  const secret = "whsec_c2VjcmV0LWJ5dGVzLWZvci10aGUtdGVzdC1vbmx5LTEyMzQ=";
  const body = '{"id":"evt_1","type":"webhook.test","created_at":"2026-01-01T00:00:00.000Z","data":{}}';
  const hex = createHmac("sha256", secret).update(body).digest("hex");

  it("accepts sha256=<hex> of the raw body keyed with the secret string", () => {
    expect(() => verifyCheeseSignature(secret, body, `sha256=${hex}`)).not.toThrow();
  });

  it("refuses another body, another secret, or a malformed header", () => {
    expect(() => verifyCheeseSignature(secret, `${body} `, `sha256=${hex}`)).toThrow(/does not match/);
    expect(() => verifyCheeseSignature(`${secret}x`, body, `sha256=${hex}`)).toThrow(/does not match/);
    expect(() => verifyCheeseSignature(secret, body, hex)).toThrow(/not sha256=/);
    expect(() => verifyCheeseSignature(secret, body, undefined)).toThrow(/missing/);
  });
});

describe("verifyWebhook", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
  const body = JSON.stringify({
    id: "evt_9",
    type: "webhook.test",
    created_at: "2026-01-01T00:00:00Z",
    data: {},
  });
  const timestamp = "1700000000";
  const standard = createHmac("sha256", standardSigningKey(secret))
    .update(`evt_9.${timestamp}.${body}`)
    .digest("base64");
  const headers = {
    "X-Cheese-Signature": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    "webhook-id": "evt_9",
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${standard}`,
  };
  const now = { now: () => 1700000000_000 };

  it("checks both signatures and returns the envelope", () => {
    expect(verifyWebhook(secret, body, headers, now)).toMatchObject({ id: "evt_9", type: "webhook.test" });
  });

  it("refuses when webhook-id is not the envelope id", () => {
    const otherId = createHmac("sha256", standardSigningKey(secret))
      .update(`evt_8.${timestamp}.${body}`)
      .digest("base64");
    expect(() =>
      verifyWebhook(
        secret,
        body,
        { ...headers, "webhook-id": "evt_8", "webhook-signature": `v1,${otherId}` },
        now,
      ),
    ).toThrow(/differs/);
  });
});

describe("signWebhook", () => {
  it("reproduces the published Standard Webhooks vector", () => {
    const signed = signWebhook(vector.secret, vector.body, {
      id: vector.id,
      timestampSeconds: Number(vector.timestamp),
    });
    expect(signed).toMatchObject({
      "webhook-id": vector.id,
      "webhook-timestamp": vector.timestamp,
      "webhook-signature": vector.signature,
    });
    expect(() =>
      verifyCheeseSignature(vector.secret, vector.body, signed["X-Cheese-Signature"]),
    ).not.toThrow();
  });

  it("during a rotation signs webhook-signature with every secret, X-Cheese-Signature with the current one", () => {
    const previous = "whsec_3q2+7w8kVw1cKp0o2Ck9xq9VfEo0Q3B6v7yYlEoNnXc=";
    const body = JSON.stringify({
      id: "evt_2",
      type: "webhook.test",
      created_at: "2026-01-01T00:00:00Z",
      data: {},
    });
    const signed = signWebhook([vector.secret, previous], body, { id: "evt_2" });
    expect(signed["webhook-signature"].split(" ")).toHaveLength(2);
    expect(signed["webhook-signature"].split(" ")[0]).toBe(
      signWebhook(vector.secret, body, {
        id: "evt_2",
        timestampSeconds: Number(signed["webhook-timestamp"]),
      })["webhook-signature"],
    );
    expect(verifyWebhook(vector.secret, body, signed)).toMatchObject({ id: "evt_2" });
    expect(() => verifyStandardSignature(previous, body, signed)).not.toThrow();
    expect(() => verifyCheeseSignature(previous, body, signed["X-Cheese-Signature"])).toThrow(
      /does not match/,
    );
  });
});
