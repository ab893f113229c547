import { randomUUID } from "node:crypto";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { NatsControl } from "./support/nats-control.ts";
import { createCheese, type Headers, http, orderBody } from "./support/orders.ts";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * The nats-server `pnpm start` started dies (SIGKILL): the launcher starts it again, like a
 * crashed service, on the same port and JetStream store, and the services reconnect to it, their
 * consumers included. `e2e/nats-restart.test.ts` does the same under load and counts every event.
 */
describe.skipIf(launcherOnly("the launcher's restart of its nats-server"))(
  "pnpm start when its nats-server dies",
  () => {
    let system: RunningSystem;
    let receiver: Receiver;
    let operator: { apiKey: Headers; bearer: Headers };

    beforeAll(async () => {
      receiver = await Receiver.start();
      system = await startSystem({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn" } });
      operator = await operatorHeaders(system);
    });
    afterAll(async () => {
      await system?.stop();
      await receiver?.close();
    });

    /**
     * Places an order (repeated with its Idempotency-Key while a service is still reconnecting, as
     * docs/api.md tells a client to), and waits for its `order.placed` webhook at the receiver.
     */
    async function orderWithWebhook(cheeseId: number): Promise<void> {
      const key = randomUUID();
      let id = 0;
      await expect
        .poll(
          async () => {
            const placed = await http(system).post("/store/order", orderBody([{ cheeseId, quantity: 1 }]), {
              ...operator.bearer,
              "idempotency-key": key,
            });
            if (placed.status === 201) id = (await json(placed)).id;
            return placed.status;
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(201);
      await expect
        .poll(() => receiver.requests("/placed").map((r) => Number(envelopeOf(r).data.order_id)), {
          timeout: 30_000,
          message: `order.placed of order ${id}`,
        })
        .toContain(id);
    }

    it("restarts it on the same port and store; writes, reads and webhooks work again", async () => {
      const api = http(system);
      const registered = await api.post(
        "/webhooks",
        { url: receiver.url("/placed"), events: ["order.placed"] },
        operator.apiKey,
      );
      expect(registered.status).toBe(201);
      const before = await createCheese(system, operator.bearer);
      await orderWithWebhook(before.id);

      const nats = new NatsControl(system);
      const natsUrl = system.natsUrl();
      const killed = await nats.kill();
      await nats.restarted(killed);
      expect(system.natsUrl()).toBe(natsUrl);
      // Log lines reach the launcher's output up to 100 ms after they are logged.
      await expect
        .poll(() => system.output())
        .toMatch(/"process":"nats-server","exit":"SIGKILL","restartInMs":\d+/);

      // A write and its read: polled, since each service reconnects on its own schedule (0.5–1 s).
      let cheeseId = 0;
      let name = "";
      await expect
        .poll(
          async () => {
            // A new name each time: a 503's write may have been made all the same.
            name = `After the restart ${randomUUID()}`;
            const created = await api.post("/cheeses", { name, pricePerKg: 12 }, operator.bearer);
            if (created.status !== 201) return created.status;
            cheeseId = (await json(created)).id;
            return 201;
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(201);
      // Polled too: with E2E_REPLICAS=2 the read may reach the other gateway, which reconnects on
      // its own schedule and answers 503 (with Retry-After) until it has.
      let read: Response | undefined;
      await expect
        .poll(
          async () => {
            read = await api.get(`/cheeses/${cheeseId}`, operator.apiKey);
            return read.status;
          },
          { timeout: 20_000, interval: 200 },
        )
        .toBe(200);
      expect((await json(read as Response)).name).toBe(name);
      // An order placed now reaches the receiver: the relay, the stream, the notification
      // service's consumer and the webhook registered before the crash all came back.
      await orderWithWebhook(cheeseId);
    });
  },
);
