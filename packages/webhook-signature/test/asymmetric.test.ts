import { generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  signWebhook,
  verifyAsymmetricSignature,
  verifyStandardSignature,
  verifyWebhookWithKeys,
  WebhookVerificationError,
} from "../src/index.ts";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";
const id = "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c";
const body = JSON.stringify({ id, type: "order.placed", created_at: "2026-03-03T11:00:00.000Z", data: {} });

function keyPair(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const jwk = { ...publicKey.export({ format: "jwk" }), kid, alg: "EdDSA", use: "sig" };
  return { privateKey, jwk };
}

describe("v1a: Ed25519 signatures verified against a JWK set", () => {
  it("verifies with the JWK set alone, and refuses a changed body, timestamp or id", () => {
    const current = keyPair("k1");
    const headers = signWebhook(secret, body, { id, ed25519Keys: [current.privateKey] });
    expect(headers["webhook-signature"]).toMatch(/^v1,\S+ v1a,\S+$/);
    const keys = { keys: [current.jwk] };
    expect(verifyWebhookWithKeys(keys, Buffer.from(body), headers)).toMatchObject({ id });
    expect(() => verifyAsymmetricSignature(keys, `${body} `, headers)).toThrow(WebhookVerificationError);
    const later = { ...headers, "webhook-timestamp": String(Number(headers["webhook-timestamp"]) + 1) };
    expect(() => verifyAsymmetricSignature(keys, body, later)).toThrow(WebhookVerificationError);
    expect(() => verifyAsymmetricSignature(keys, body, { ...headers, "webhook-id": "evt_other" })).toThrow(
      WebhookVerificationError,
    );
    // The HMAC beside it still verifies with the secret.
    expect(() => verifyStandardSignature(secret, body, headers)).not.toThrow();
  });

  it("signs exactly {id}.{timestamp}.{body} as Standard Webhooks specifies", () => {
    const current = keyPair("k1");
    const headers = signWebhook(secret, body, {
      id,
      timestampSeconds: 1_767_225_600,
      hmac: false,
      ed25519Keys: [current.privateKey],
    });
    const expected = sign(null, Buffer.from(`${id}.1767225600.${body}`), current.privateKey).toString(
      "base64",
    );
    expect(headers["webhook-signature"]).toBe(`v1a,${expected}`);
  });

  it("refuses a signature by a key the set does not hold", () => {
    const headers = signWebhook(secret, body, { id, ed25519Keys: [keyPair("k1").privateKey] });
    expect(() => verifyAsymmetricSignature({ keys: [keyPair("k2").jwk] }, body, headers)).toThrow(
      /no v1a webhook-signature matches/,
    );
    expect(() => verifyAsymmetricSignature({ keys: [] }, body, headers)).toThrow(/no Ed25519 key/);
  });

  it("during a key rotation both keys sign, so a set of either verifies", () => {
    const [next, previous] = [keyPair("k2"), keyPair("k1")];
    const headers = signWebhook(secret, body, {
      id,
      hmac: false,
      ed25519Keys: [next.privateKey, previous.privateKey.export({ format: "jwk" })],
    });
    expect(headers["webhook-signature"].split(" ")).toHaveLength(2);
    expect(() => verifyAsymmetricSignature({ keys: [previous.jwk] }, body, headers)).not.toThrow();
    expect(() => verifyAsymmetricSignature({ keys: [next.jwk] }, body, headers)).not.toThrow();
  });
});
