import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { WebhookSigningKeySet } from "@cheese/contracts";
import type { EventMetadata, EventStore } from "@cheese/event-store";
import { type Clock, foldEvents, handleCommand } from "@cheese/service-kit";
import {
  keysAt,
  type SigningKey,
  type SigningKeyState,
  signingKeyDecider,
  signingKeyStream,
} from "../domain/signing-key.ts";
import type { SecretBox } from "./secrets.ts";

/** A new Ed25519 key, its private half sealed with the secrets' key; `kid` is its RFC 7638 thumbprint. */
export function generateSigningKey(box: SecretBox, now: string): SigningKey {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" });
  if (typeof jwk.x !== "string" || typeof jwk.d !== "string") throw new Error("Ed25519 key without x or d");
  const kid = createHash("sha256")
    .update(JSON.stringify({ crv: "Ed25519", kty: "OKP", x: jwk.x }))
    .digest("base64url");
  return { kid, x: jwk.x, sealedD: box.seal(jwk.d), createdAt: now };
}

/**
 * The system's webhook signing keys, kept in the event store (`signingkey-webhooks`), shared by
 * every replica: created once (the first replica to append wins, the others read it), rotated
 * with an overlap. Read at each use, so a rotation recorded by any replica signs at once.
 */
export class WebhookSigningKeys {
  /** Private keys opened once per process, by kid. */
  private readonly opened = new Map<string, KeyObject>();

  constructor(
    private readonly store: EventStore,
    private readonly box: SecretBox,
    private readonly clock: Clock,
  ) {}

  /** Makes the first key unless one exists. */
  async ensure(): Promise<void> {
    await handleCommand(this.store, signingKeyStream, signingKeyDecider, {
      type: "Create",
      key: generateSigningKey(this.box, this.clock.now().toISOString()),
    });
  }

  async rotate(overlapMs: number, metadata?: EventMetadata) {
    const now = this.clock.now().toISOString();
    const { state } = await handleCommand(
      this.store,
      signingKeyStream,
      signingKeyDecider,
      { type: "Rotate", key: generateSigningKey(this.box, now), overlapMs, now },
      metadata ? { metadata } : {},
    );
    const previous = state.previous;
    if (!state.current || !previous) throw new Error("a rotation left no previous key");
    return {
      kid: state.current.kid,
      previousKid: previous.key.kid,
      previousKeyExpiresAt: previous.expiresAt,
    };
  }

  /** The public keys that sign now, as a JWK set. */
  async keySet(): Promise<WebhookSigningKeySet> {
    return {
      keys: keysAt(await this.state(), this.clock.now().getTime()).map((key) => ({
        kty: "OKP" as const,
        crv: "Ed25519" as const,
        x: key.x,
        kid: key.kid,
        alg: "EdDSA" as const,
        use: "sig" as const,
      })),
    };
  }

  /** The private keys that sign an attempt made now, the current one first. */
  async signing(): Promise<KeyObject[]> {
    return keysAt(await this.state(), this.clock.now().getTime()).map((key) => this.open(key));
  }

  private async state(): Promise<SigningKeyState> {
    return foldEvents(signingKeyDecider, await this.store.readStream(signingKeyStream));
  }

  private open(key: SigningKey): KeyObject {
    let opened = this.opened.get(key.kid);
    if (!opened) {
      const d = this.box.open(key.sealedD);
      opened = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", x: key.x, d }, format: "jwk" });
      this.opened.set(key.kid, opened);
    }
    return opened;
  }
}
