import { Order, orderingRpc } from "@cheese/contracts";
import { type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { address, fakeCatalogue, fakeCustomerVault } from "@cheese/service-testing/stand-ins";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OrderEvent } from "../src/domain/order.ts";
import { REVIEW_TAKEOVER_MS } from "../src/handlers/order-review.ts";
import { orderingService } from "../src/main.ts";
import { expectOutcomeOfPlacement, newBroker } from "./support.ts";

const HOUR = 3_600_000;
const erasedAddress = { street: "[erased]", city: "[erased]", country: address.country };
const placedAt = "2026-11-22T10:00:00.000Z";
const customer = { kind: "customer" as const, customerId: 42 };
const operatorClient = { kind: "client" as const, customerId: null };
const fields = (cheeseId: number) => ({
  items: [{ cheeseId, quantity: 2 }],
  shippingAddress: address,
  notes: null,
});

/** Given events, when an RPC, then its reply and the events it appended (ORDER_AUTO_APPROVE_DELAY=1h). */
describe("ordering's handlers", () => {
  const broker = newBroker();
  const catalogue = fakeCatalogue(broker);
  const vault = fakeCustomerVault(broker);
  let spec: ServiceSpec;
  beforeAll(async () => {
    spec = await serviceSpec(orderingService, {
      broker,
      start: placedAt,
      env: { ORDER_AUTO_APPROVE_DELAY: "1h" },
    });
    catalogue.add(5, { name: "Comté", pricePerKg: 12.5 });
  });
  afterAll(async () => {
    await spec.stop();
    await catalogue.close();
    await vault.close();
  });

  const placed = (orderId: number): OrderEvent => ({
    type: "OrderPlaced",
    data: {
      order: {
        id: orderId,
        items: [{ cheeseId: 5, cheeseName: "Comté", quantity: 2, pricePerKg: 12.5 }],
        shippingAddress: address,
        status: "placed",
        notes: null,
        total: 25,
        shipDate: null,
        createdAt: placedAt,
        updatedAt: placedAt,
      },
      customerId: 42,
      ownerId: "cust:42",
    },
  });
  const approved = (orderId: number): OrderEvent => {
    const { order, customerId } = placed(orderId).data;
    return { type: "OrderApproved", data: { order: { ...order, status: "approved" }, customerId } };
  };

  it("places an order priced from the catalogue, at the clock's time", async () => {
    const { order } = await spec
      .given()
      .when(orderingRpc.placeOrder, { fields: fields(5), owner: { customerId: 42, ownerId: "cust:42" } })
      .thenReturns({
        reply: { order: { status: "placed", total: 25, createdAt: placedAt, shippingAddress: address } },
      });
    // The customer's address is stored sealed (under the customer's key), the order redacted.
    const stored = await spec.store.readStream(`order-${order.id}`);
    expect(stored).toMatchObject([
      {
        type: "OrderPlaced",
        data: {
          ...placed(order.id).data,
          order: { ...placed(order.id).data.order, shippingAddress: erasedAddress },
          personal: expect.any(String),
        },
      },
    ]);
    expect(JSON.stringify(stored)).not.toContain(address.street);
  });

  it("answers an erased customer's orders with the address and notes redacted", async () => {
    const { order } = await spec
      .given()
      .when(orderingRpc.placeOrder, {
        fields: { ...fields(5), notes: "ring twice" },
        owner: { customerId: 77, ownerId: "cust:77" },
      })
      .thenReturns({ reply: { order: { shippingAddress: address, notes: "ring twice" } } });
    const asOperator = { kind: "operator" as const, customerId: null };
    vault.erase(77);
    const { order: read } = await spec.call(orderingRpc.getOrder, { orderId: order.id, actor: asOperator });
    expect(read).toEqual({ ...order, shippingAddress: erasedAddress, notes: null });
    expect(Order.safeParse(read).success).toBe(true);
    const { items } = await spec.call(orderingRpc.listOrders, { actor: asOperator, limit: 100 });
    expect(items.find((listed) => listed.id === order.id)).toEqual(read);
  });

  it("refuses lines the catalogue cannot sell, naming each, and places nothing", async () => {
    await spec
      .given()
      .when(orderingRpc.placeOrder, { fields: fields(404), owner: { customerId: 42, ownerId: "cust:42" } })
      .thenRefuses({
        status: 422,
        errors: [{ field: "items[0].cheeseId", message: "cheese 404 does not exist" }],
      });
  });

  it("ships an approved order for an operator client, and refuses a customer (403) whatever the order", async () => {
    const shipment = { carrier: "DHL", trackingNumber: "JD1", estimatedDelivery: "2030-01-01T00:00:00Z" };
    await spec
      .given({ "order-900": [placed(900), approved(900)] })
      .when(orderingRpc.shipOrder, { orderId: 900, actor: customer, ...shipment })
      .thenRefuses({ status: 403, type: "forbidden" });
    await spec
      .given()
      .when(orderingRpc.shipOrder, { orderId: 900, actor: operatorClient, ...shipment })
      .thenReturns({
        reply: { order: { id: 900, status: "shipped", shipDate: placedAt } },
        events: {
          "order-900": [
            {
              type: "OrderShipped",
              data: {
                order: {
                  ...approved(900).data.order,
                  status: "shipped",
                  shipDate: placedAt,
                  updatedAt: placedAt,
                },
                customerId: 42,
                ...shipment,
              },
            },
          ],
        },
      });
  });

  it("keeps an order placed until the delay has passed, then approves it, caused by the placement", async () => {
    const { order } = await spec
      .given()
      .when(orderingRpc.placeOrder, { fields: fields(5), owner: { customerId: 42, ownerId: "cust:42" } })
      .thenReturns({});
    const status = async () =>
      (await spec.call(orderingRpc.getOrder, { orderId: order.id, actor: customer })).order.status;
    await spec.clock.advance(HOUR - 1);
    expect(await status()).toBe("placed");
    await spec.clock.advance(1);
    await expect.poll(status).toBe("approved");
    await expectOutcomeOfPlacement(spec.store, order.id, "OrderApproved");
  });

  it("reviews an order another replica placed only REVIEW_TAKEOVER_MS after the one it placed itself", async () => {
    const now = spec.clock.now().toISOString();
    const elsewhere = placed(950);
    elsewhere.data.order = { ...elsewhere.data.order, createdAt: now, updatedAt: now };
    const { order } = await spec
      .given({ "order-950": [elsewhere] })
      .when(orderingRpc.placeOrder, { fields: fields(5), owner: { customerId: 42, ownerId: "cust:42" } })
      .thenReturns({});
    const status = async (orderId: number) =>
      (await spec.call(orderingRpc.getOrder, { orderId, actor: customer })).order.status;
    await spec.clock.advance(HOUR);
    await expect.poll(() => status(order.id)).toBe("approved");
    expect(await status(950)).toBe("placed"); // its placing replica has the time to review it
    await spec.clock.advance(REVIEW_TAKEOVER_MS);
    await expect.poll(() => status(950)).toBe("approved");
  });
});
