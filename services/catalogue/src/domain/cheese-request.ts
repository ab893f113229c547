import { type Decider, DomainError, type DomainEvent } from "@cheese/service-kit";

/**
 * One stream per (caller, Idempotency-Key) of `POST /cheeses` (`cheeserequest-<key>`, the key
 * being the gateway's sha256 of caller id and header): the first create claims a cheese id for
 * the key; every repeat finds it and answers with that cheese instead of creating another, even
 * when the gateway gave up on the first reply (decisions.md "Cheeses", "Orders").
 * The fingerprint of the request (method, path, canonical body) is kept, so a repeat with
 * another body is refused with 409. A claim counts for 24 h, like the gateway's record; after
 * that the key is new again.
 */
export type CheeseRequestClaim = { cheeseId: number; fingerprint: string; claimedAt: string };

export type CheeseRequestEvent = DomainEvent<"CheeseRequestClaimed", CheeseRequestClaim>;

export type CheeseRequestCommand = { type: "Claim"; cheeseId: number; fingerprint: string; at: string };

export type CheeseRequestState = { claim?: CheeseRequestClaim };

export const CHEESE_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;

export const cheeseRequestStream = (key: string) => `cheeserequest-${key}`;

/** The claim that still counts at `at` (ISO time), if any. */
export function activeClaim(state: CheeseRequestState, at: string): CheeseRequestClaim | undefined {
  const { claim } = state;
  if (!claim) return undefined;
  return Date.parse(at) - Date.parse(claim.claimedAt) < CHEESE_REQUEST_TTL_MS ? claim : undefined;
}

export function keyReusedError(): DomainError {
  return new DomainError(409, "conflict", "this Idempotency-Key was already used with a different request");
}

export const cheeseRequestDecider: Decider<CheeseRequestState, CheeseRequestCommand, CheeseRequestEvent> = {
  initialState: () => ({}),
  evolve: (_state, event) => ({ claim: { ...event.data } }),
  decide(command, state) {
    const claim = activeClaim(state, command.at);
    if (!claim) {
      return [
        {
          type: "CheeseRequestClaimed",
          data: { cheeseId: command.cheeseId, fingerprint: command.fingerprint, claimedAt: command.at },
        },
      ];
    }
    if (claim.fingerprint !== command.fingerprint) throw keyReusedError();
    return [];
  },
};
