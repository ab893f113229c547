import { envelopeOf, type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { createCheese, http, orderBody, registerCustomer, waitForStatus } from "./support/orders.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

const REFUSED_FOR_MS = 3000;

/**
 * Issue 26 point 1, ordered lanes (docs/webhooks.md "Ordered lanes"), on the multi-process system:
 * a registration with `ordered: true` gets one order's events one at a time in the order they
 * happened, each with X-Cheese-Sequence, while another order's lane goes on. Run with
 * E2E_REPLICAS=2 LAUNCH_MODE=separate too: either notification replica's scheduler keeps the lane.
 */
describe("ordered webhook lanes", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const { api } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        // Twenty attempts a second apart: the first order's head is refused for as long as the
        // other order takes to reach the receiver, seconds on a loaded machine.
        WEBHOOK_RETRY_DELAYS: Array.from({ length: 20 }, (_, i) => (i === 0 ? "0" : "1s")).join(","),
        ORDER_AUTO_APPROVE_DELAY: "0s",
      },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  /** A customer and a cheese ready, so that placing the order is one call. */
  const readyToOrder = async () => {
    const customer = await registerCustomer(system);
    const cheese = await createCheese(system, auth.bearer);
    return async () => {
      const response = await http(system).post(
        "/store/order",
        orderBody([{ cheeseId: cheese.id, quantity: 1 }]),
        customer.bearer,
      );
      expect(response.status).toBe(201);
      return { id: (await json(response)).id as number, customer };
    };
  };
  const orderOf = (request: ReceivedRequest) => (envelopeOf(request).data as { order_id: string }).order_id;
  const summary = (request: ReceivedRequest) =>
    `${envelopeOf(request).type} #${request.headers["x-cheese-sequence"]}`;

  it("holds order.confirmed until order.placed, refused until another order's lane has gone and 3 s at least, is delivered: sequences 1 and 2", async () => {
    const created = await api("POST", "/webhooks", {
      url: receiver.url("/ordered"),
      events: ["order.placed", "order.confirmed"],
      ordered: true,
    });
    expect(created.status).toBe(201);
    const hook = await json(created);
    expect(hook.ordered).toBe(true);
    expect((await json(await api("GET", `/webhooks/${hook.id}`))).ordered).toBe(true);

    // The first order's order.placed is refused (500) for 3 s from its first attempt, and for as
    // long as no other order's event has arrived; all else is taken. So the other order's lane is
    // shown going while the first one's waits: were it held behind it, neither would go on.
    let slowOrder: string | undefined;
    let refusedUntil = Number.POSITIVE_INFINITY;
    let otherArrived = false;
    const answers = new Map<ReceivedRequest, number>();
    receiver.behave("/ordered", (request) => {
      const envelope = envelopeOf(request);
      if (slowOrder !== undefined && orderOf(request) !== slowOrder) otherArrived = true;
      const refuse =
        envelope.type === "order.placed" &&
        (slowOrder === undefined || orderOf(request) === slowOrder) &&
        (request.receivedAt < refusedUntil || !otherArrived);
      if (refuse && slowOrder === undefined) {
        slowOrder = orderOf(request);
        refusedUntil = request.receivedAt + REFUSED_FOR_MS;
      }
      answers.set(request, refuse ? 500 : 200);
      return { status: refuse ? 500 : 200 };
    });

    const placeSlow = await readyToOrder();
    const placeOther = await readyToOrder();
    const slow = await placeSlow();
    await expect.poll(() => slowOrder, { timeout: 20_000 }).toBe(String(slow.id));
    // Another order, placed and approved while the first one's lane waits, is not held up by it.
    const other = await placeOther();
    await waitForStatus(system, slow.id, "approved", slow.customer.bearer);
    const ofOrder = (id: number) => receiver.requests("/ordered").filter((r) => orderOf(r) === String(id));
    await expect
      .poll(() => ofOrder(other.id).map(summary), { timeout: 20_000 })
      .toEqual(["order.placed #1", "order.confirmed #2"]);
    // The other order's lane starts with its order.placed; its order.confirmed waits for the
    // order's approval, whose time is the ordering service's, not the lanes'.
    const otherStarted = ofOrder(other.id)[0]!.receivedAt;

    // The first order: order.placed over and over until accepted, then order.confirmed, once.
    await expect
      .poll(() => ofOrder(slow.id).at(-1) && summary(ofOrder(slow.id).at(-1)!), { timeout: 30_000 })
      .toBe("order.confirmed #2");
    const slowRequests = ofOrder(slow.id);
    const placed = slowRequests.slice(0, -1);
    expect(placed.length).toBeGreaterThan(2);
    expect(new Set(placed.map(summary))).toEqual(new Set(["order.placed #1"]));
    expect(placed.slice(0, -1).every((request) => answers.get(request) === 500)).toBe(true);
    expect(answers.get(placed.at(-1)!)).toBe(200);
    expect(placed.at(-1)!.receivedAt).toBeGreaterThanOrEqual(refusedUntil);
    // The other order's lane went on while the first one's waited: its first event arrived before
    // the first order's head was taken.
    expect(otherStarted).toBeLessThan(placed.at(-1)!.receivedAt);
    expect(slowRequests.at(-1)!.receivedAt).toBeGreaterThanOrEqual(placed.at(-1)!.receivedAt);

    // What an operator finds of a delivery's number: each attempt's `sequence`, as its request
    // carried it, in the delivery's detail and in the list.
    const deliveryId = Number(placed[0]!.headers["x-cheese-delivery"]);
    type Attempt = { sequence?: number; request?: { headers: Record<string, string> } | null };
    const attemptsOf = async (id: number) =>
      (await json(await api("GET", `/webhooks/${hook.id}/deliveries/${id}`))).attempts as Attempt[];
    const detailed = async () =>
      (await attemptsOf(deliveryId)).map((attempt) => [
        attempt.sequence,
        attempt.request?.headers["x-cheese-sequence"],
      ]);
    await expect.poll(detailed).toEqual(placed.map(() => [1, "1"]));
    const listed = await json(await api("GET", `/webhooks/${hook.id}/deliveries?limit=100`));
    const inList = (listed.items as { id: number; attempts: Attempt[] }[]).find(
      ({ id }) => id === deliveryId,
    );
    expect(inList?.attempts.map((attempt) => attempt.sequence)).toEqual(placed.map(() => 1));
    // The order's next event went second in its lane, once.
    const confirmed = Number(slowRequests.at(-1)!.headers["x-cheese-delivery"]);
    await expect
      .poll(async () => (await attemptsOf(confirmed)).map((attempt) => attempt.sequence))
      .toEqual([2]);
  });

  it("turns ordering off and on by PATCH, shown in reads; a bad value is 422 naming ordered", async () => {
    const created = await json(
      await api("POST", "/webhooks", { url: receiver.url("/plain"), events: ["order.placed"] }),
    );
    expect(created.ordered).toBe(false);
    const patched = await api("PATCH", `/webhooks/${created.id}`, { ordered: true });
    expect(patched.status).toBe(200);
    expect((await json(patched)).ordered).toBe(true);
    const list = await json(await api("GET", "/webhooks?limit=100"));
    expect(list.items.find((item: { id: number }) => item.id === created.id).ordered).toBe(true);
    const bad = await api("PATCH", `/webhooks/${created.id}`, { ordered: "yes" });
    expect(bad.status).toBe(422);
    expect((await json(bad)).errors).toEqual([expect.objectContaining({ field: "ordered" })]);
  });
});
