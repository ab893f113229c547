import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { orderRequestDecider } from "../src/domain/order-request.ts";

describe("idempotency key claim", () => {
  const given = specFor(orderRequestDecider);
  const claimed = { type: "OrderRequestClaimed" as const, data: { orderId: 5, fingerprint: "a" } };

  it("claims an order id for a new key", () => {
    given([]).when({ type: "Claim", orderId: 5, fingerprint: "a" }).thenEmits([claimed]);
  });

  it("keeps the first order id for a repeat of the same request", () => {
    given([claimed]).when({ type: "Claim", orderId: 6, fingerprint: "a" }).thenEmits([]);
  });

  it("refuses the key for a different request with 409", () => {
    given([claimed])
      .when({ type: "Claim", orderId: 6, fingerprint: "b" })
      .thenRefuses({ body: { status: 409, type: "conflict" } });
  });
});
