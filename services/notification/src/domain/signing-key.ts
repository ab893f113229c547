import { type Decider, type DomainEvent, validationFailed } from "@cheese/service-kit";
import type { SealedSecret } from "../security/secrets.ts";

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
