import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import type { WebhookSigningKeySet } from "@cheese/contracts";
import type { EventMetadata, EventStore } from "@cheese/event-store";
import {
  type Clock,
  type Decider,
  type DomainEvent,
  handleCommand,
  readState,
  validationFailed,
} from "@cheese/service-kit";
import type { SealedSecret, SecretBox } from "./secrets.ts";

/**
 * The system's webhook signing key (Ed25519): `v1a` signatures of the registrations that ask for
 * `ed25519`. Its public half is published as a JWK (`x`, base64url); the private half (`d`) is
 * held only sealed, as the registrations' secrets are.
 */
export interface SigningKey {
  /** The RFC 7638 thumbprint of the public key. */
  kid: string;
  x: string;
  sealedD: SealedSecret;
  createdAt: string;
}

export type SigningKeyEvent =
  | DomainEvent<"SigningKeyCreated", SigningKey>
  | DomainEvent<"SigningKeyRotated", { key: SigningKey; previousKid: string; previousExpiresAt: string }>;

export type SigningKeyCommand =
  /** Creates the first key; once there is one, nothing. */
  | { type: "Create"; key: SigningKey }
  /** `key` signs from `now` on; the one it replaces also signs until `now + overlapMs`. */
  | { type: "Rotate"; key: SigningKey; overlapMs: number; now: string };

export interface SigningKeyState {
  current: SigningKey | null;
  /** The key a rotation replaced, while it still signs. */
  previous: { key: SigningKey; expiresAt: string } | null;
}

/** One stream holds the system's key and its rotations. */
export const signingKeyStream = "signingkey-webhooks";

export const DEFAULT_KEY_OVERLAP_MS = 24 * 3_600_000;
export const MAX_KEY_OVERLAP_MS = 7 * 24 * 3_600_000;

export const signingKeyDecider: Decider<SigningKeyState, SigningKeyCommand, SigningKeyEvent> = {
  initialState: () => ({ current: null, previous: null }),
  evolve(state, event) {
    switch (event.type) {
      case "SigningKeyCreated":
        return { current: event.data, previous: null };
      case "SigningKeyRotated":
        return state.current
          ? {
              current: event.data.key,
              previous: { key: state.current, expiresAt: event.data.previousExpiresAt },
            }
          : { current: event.data.key, previous: null };
      default:
        return state;
    }
  },
  decide(command, state) {
    if (command.type === "Create" || !state.current) {
      return state.current ? [] : [{ type: "SigningKeyCreated", data: command.key }];
    }
    if (command.overlapMs < 0 || command.overlapMs > MAX_KEY_OVERLAP_MS) {
      throw validationFailed("request body failed validation", [
        { field: "overlapSeconds", message: "must be 0 to 604800 (7 days)" },
      ]);
    }
    const previousExpiresAt = new Date(Date.parse(command.now) + command.overlapMs).toISOString();
    return [
      {
        type: "SigningKeyRotated",
        data: { key: command.key, previousKid: state.current.kid, previousExpiresAt },
      },
    ];
  },
};

/** The keys that sign, and are published, at `now`: the current one first, then one in its overlap. */
export function keysAt(state: SigningKeyState, now: number): SigningKey[] {
  if (!state.current) return [];
  const previous = state.previous;
  return previous && Date.parse(previous.expiresAt) > now ? [state.current, previous.key] : [state.current];
}

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
 * with an overlap. Its tail is read at each use (`readState`), so a rotation recorded by any
 * replica signs at once; the events before it are folded once, not at every attempt.
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

  /** The keys as the stream holds them now (its tail read onto the state folded before). */
  private state(): Promise<SigningKeyState> {
    return readState(this.store, signingKeyStream, signingKeyDecider);
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
