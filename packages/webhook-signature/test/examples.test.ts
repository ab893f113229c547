import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookApp } from "../examples/hono.ts";
import { webhookServer } from "../examples/node-http.ts";
import { signWebhook, type WebhookEnvelope } from "../src/index.ts";

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";
const event = {
  id: "evt_2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e",
  type: "webhook.test",
  created_at: "2026-03-05T10:00:00.000Z",
  data: { webhook_id: "3", message: "a test event from Cheese Store" },
};
// Bytes a JSON parser would not give back as they were: the signature covers them exactly.
const body = `{ "id": "${event.id}", "type":"webhook.test","created_at":"${event.created_at}","data":{"webhook_id":"3","message":"a test event from Cheese Store"}}`;

type Start = (
  onEvent: (event: WebhookEnvelope) => void,
) => Promise<{ url: string; close: () => Promise<void> }>;

const receivers: Record<string, Start> = {
  hono: async (onEvent) => {
    const server = serve({ fetch: webhookApp(secret, onEvent).fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/webhooks/cheese`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  },
  "node:http": async (onEvent) => {
    const server = webhookServer(secret, onEvent);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}/webhooks/cheese`,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  },
};

for (const [name, start] of Object.entries(receivers)) {
  describe(`the ${name} receiver example`, () => {
    const received: WebhookEnvelope[] = [];
    let receiver: Awaited<ReturnType<Start>>;
    beforeAll(async () => {
      receiver = await start((e) => {
        received.push(e);
      });
    });
    afterAll(() => receiver.close());

    const send = (payload: string, headers: Record<string, string>) =>
      fetch(receiver.url, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: payload,
      });

    it("accepts a signed delivery and hands over the event", async () => {
      const response = await send(body, { ...signWebhook(secret, body, { id: event.id }) });
      expect(response.status).toBe(204);
      expect(received).toEqual([event]);
    });

    it("refuses a changed body, a replayed old delivery and an unsigned one, handing over nothing", async () => {
      const before = received.length;
      const signed = { ...signWebhook(secret, body, { id: event.id }) };
      expect((await send(body.replace('"3"', '"4"'), signed)).status).toBe(400);
      const old = {
        ...signWebhook(secret, body, { id: event.id, timestampSeconds: Math.floor(Date.now() / 1000) - 600 }),
      };
      expect((await send(body, old)).status).toBe(400);
      expect((await send(body, {})).status).toBe(400);
      expect(received.length).toBe(before);
    });

    it("refuses a body over 1 MiB", async () => {
      const huge = `{"id":"${"x".repeat(1024 * 1024 + 1)}"}`;
      const response = await send(huge, { ...signWebhook(secret, huge, { id: "x" }) }).catch(() => undefined);
      expect(response === undefined || response.status === 413).toBe(true);
    });
  });
}
