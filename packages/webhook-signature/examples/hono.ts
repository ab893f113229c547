// A Cheese Store webhook receiver with Hono. Run it:
//   WEBHOOK_SECRET=whsec_... node hono.js   (or: tsx hono.ts), then register http(s)://<host>:3000/webhooks/cheese
//
// The signature covers the exact bytes sent, so read the raw body (c.req.arrayBuffer()) and verify
// it before anything parses it; parse the event from what verifyWebhook returns.
import { verifyWebhook, type WebhookEnvelope, WebhookVerificationError } from "@cheese/webhook-signature";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";

export function webhookApp(secret: string, onEvent: (event: WebhookEnvelope) => Promise<void> | void): Hono {
  const app = new Hono();
  app.post("/webhooks/cheese", bodyLimit({ maxSize: 1024 * 1024 }), async (c) => {
    const rawBody = new Uint8Array(await c.req.arrayBuffer());
    let event: WebhookEnvelope;
    try {
      event = verifyWebhook(secret, rawBody, c.req.raw.headers);
    } catch (error) {
      if (error instanceof WebhookVerificationError) return c.json({ error: error.message }, 400);
      throw error;
    }
    // A retry carries the same event.id: process each id once. Answer 2xx within 10 seconds;
    // anything else is retried later.
    await onEvent(event);
    return c.body(null, 204);
  });
  return app;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET ?? "";
  const app = webhookApp(secret, (event) => console.log(event.type, event.id, event.data));
  serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) });
}
