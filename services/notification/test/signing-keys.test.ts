import { createHash, createPublicKey, type KeyObject, randomBytes, sign, verify } from "node:crypto";
import { join } from "node:path";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SecretBox } from "../src/security/secrets.ts";
import { signingKeyStream, WebhookSigningKeys } from "../src/security/signing-keys.ts";

/** A key's RFC 7638 thumbprint (its published `kid`) from its public half. */
const thumbprint = (x: string) =>
  createHash("sha256")
    .update(JSON.stringify({ crv: "Ed25519", kty: "OKP", x }))
    .digest("base64url");

describe("the system's webhook signing key", () => {
  let data: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    data = tempDir("signing-keys");
    store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
  });
  afterEach(async () => {
    await store.close();
    data.remove();
  });

  it("is created once by replicas starting together, stored only sealed, and signs for its published key", async () => {
    const box = new SecretBox(randomBytes(32));
    const clock = new ManualClock(new Date("2026-03-01T10:00:00.000Z"));
    const [a, b] = [new WebhookSigningKeys(store, box, clock), new WebhookSigningKeys(store, box, clock)];
    await Promise.all([a.ensure(), b.ensure(), a.ensure()]);
    const events = await store.readStream(signingKeyStream);
    expect(events.map((event) => event.type)).toEqual(["SigningKeyCreated"]);

    const [published] = (await b.keySet()).keys;
    expect((await a.keySet()).keys).toEqual([published]);
    const [privateKey] = await a.signing();
    const d = privateKey!.export({ format: "jwk" }).d!;
    expect(JSON.stringify(events)).not.toContain(d);
    const signature = sign(null, Buffer.from("payload"), privateKey!);
    const publicKey = createPublicKey({ key: published!, format: "jwk" });
    expect(verify(null, Buffer.from("payload"), publicKey, signature)).toBe(true);

    // Another secrets key cannot open it.
    const stranger = new WebhookSigningKeys(store, new SecretBox(randomBytes(32)), clock);
    await expect(stranger.signing()).rejects.toThrow();
  });

  it("signs with a key another replica rotated to from the next attempt on, and with the replaced one until its overlap ends", async () => {
    const box = new SecretBox(randomBytes(32));
    const clock = new ManualClock(new Date("2026-03-01T10:00:00.000Z"));
    const [a, b] = [new WebhookSigningKeys(store, box, clock), new WebhookSigningKeys(store, box, clock)];
    await a.ensure();
    const kidOf = (key: KeyObject) => thumbprint(key.export({ format: "jwk" }).x!);
    const [first] = await a.signing();
    const rotated = await b.rotate(60_000);
    expect(rotated.previousKid).toBe(kidOf(first!));
    expect((await a.signing()).map(kidOf)).toEqual([rotated.kid, rotated.previousKid]);
    expect((await a.keySet()).keys.map((key) => key.kid)).toEqual([rotated.kid, rotated.previousKid]);
    clock.advance(60_001);
    expect((await a.signing()).map(kidOf)).toEqual([rotated.kid]);
  });
});
