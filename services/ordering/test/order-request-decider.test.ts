import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { orderRequestDecider } from "../src/domain/order-request.ts";

describe("idempotency key claim", () => {
  const given = specFor(orderRequestDecider);
  const at = "2026-11-22T10:00:00.000Z";
  const claimed = {
    type: "OrderRequestClaimed" as const,
    data: { orderId: 5, fingerprint: "a", claimedAt: at },
  };

  it("claims an order id for a new key", () => {
    given([]).when({ type: "Claim", orderId: 5, fingerprint: "a", now: at }).thenEmits([claimed]);
  });

  it("keeps the first order id for a repeat of the same request", () => {
    given([claimed])
      .when({ type: "Claim", orderId: 6, fingerprint: "a", now: "2026-11-23T09:59:59.000Z" })
      .thenEmits([]);
  });

  it("refuses the key for a different request with 409", () => {
    given([claimed])
      .when({ type: "Claim", orderId: 6, fingerprint: "b", now: at })
      .thenRefuses({ body: { status: 409, type: "conflict" } });
  });

  it("treats the key as new once 24 hours have passed, whatever the body", () => {
    const later = "2026-11-23T10:00:00.000Z";
    given([claimed])
      .when({ type: "Claim", orderId: 6, fingerprint: "b", now: later })
      .thenEmits([{ type: "OrderRequestClaimed", data: { orderId: 6, fingerprint: "b", claimedAt: later } }]);
  });
});
