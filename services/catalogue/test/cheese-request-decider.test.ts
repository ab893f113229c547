import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { type CheeseRequestEvent, cheeseRequestDecider } from "../src/domain/cheese-request.ts";

describe("Idempotency-Key claim of a cheese id", () => {
  const given = specFor(cheeseRequestDecider);
  const at = "2026-11-22T10:00:00.000Z";
  const claimed: CheeseRequestEvent = {
    type: "CheeseRequestClaimed",
    data: { cheeseId: 5, fingerprint: "a", claimedAt: at },
  };

  it("claims a cheese id for a new key", () => {
    given([]).when({ type: "Claim", cheeseId: 5, fingerprint: "a", at }).thenEmits([claimed]);
  });

  it("keeps the first cheese id for a repeat of the same request", () => {
    given([claimed])
      .when({ type: "Claim", cheeseId: 6, fingerprint: "a", at: "2026-11-22T10:00:05.000Z" })
      .thenEmits([]);
  });

  it("refuses the key for a different request with 409", () => {
    given([claimed])
      .when({ type: "Claim", cheeseId: 6, fingerprint: "b", at: "2026-11-22T10:00:05.000Z" })
      .thenRefuses({ body: { status: 409, type: "conflict" } });
  });

  it("still holds the key just under 24 h later", () => {
    given([claimed])
      .when({ type: "Claim", cheeseId: 6, fingerprint: "b", at: "2026-11-23T09:59:59.999Z" })
      .thenRefuses({ body: { status: 409 } });
  });

  it("lets the key be claimed afresh, with any body, once 24 h have passed", () => {
    const later = "2026-11-23T10:00:00.000Z";
    given([claimed])
      .when({ type: "Claim", cheeseId: 9, fingerprint: "b", at: later })
      .thenEmits([
        { type: "CheeseRequestClaimed", data: { cheeseId: 9, fingerprint: "b", claimedAt: later } },
      ]);
  });

  it("keys a repeat to the newest claim after a fresh one", () => {
    const renewed: CheeseRequestEvent = {
      type: "CheeseRequestClaimed",
      data: { cheeseId: 9, fingerprint: "b", claimedAt: "2026-11-23T10:00:00.000Z" },
    };
    given([claimed, renewed])
      .when({ type: "Claim", cheeseId: 10, fingerprint: "b", at: "2026-11-23T10:00:01.000Z" })
      .thenEmits([]);
    given([claimed, renewed])
      .when({ type: "Claim", cheeseId: 10, fingerprint: "a", at: "2026-11-23T10:00:01.000Z" })
      .thenRefuses({ body: { status: 409 } });
  });
});
