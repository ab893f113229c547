// A Cheese Store webhook receiver with Node's http module alone. Run it:
//   WEBHOOK_SECRET=whsec_... node node-http.js   (or: tsx node-http.ts), then register http(s)://<host>:3000/webhooks/cheese
//
// The signature covers the exact bytes sent: collect the raw body, verify it, and only then use
// the event verifyWebhook returns (never JSON.parse-then-stringify: the bytes would differ).
import { createServer, type Server } from "node:http";
import { verifyWebhook, type WebhookEnvelope, WebhookVerificationError } from "@cheese/webhook-signature";

const MAX_BODY_BYTES = 1024 * 1024;

export function webhookServer(
  secret: string,
  onEvent: (event: WebhookEnvelope) => Promise<void> | void,
): Server {
  return createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/webhooks/cheese") {
      res.writeHead(404).end();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413, { connection: "close" }).end();
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", async () => {
      let event: WebhookEnvelope;
      try {
        event = verifyWebhook(secret, Buffer.concat(chunks), req.headers);
      } catch (error) {
        const status = error instanceof WebhookVerificationError ? 400 : 500;
        res.writeHead(status, { "content-type": "text/plain" }).end(String((error as Error).message));
        return;
      }
      try {
        // A retry carries the same event.id: process each id once. Answer 2xx within 10 seconds.
        await onEvent(event);
        res.writeHead(204).end();
      } catch {
        res.writeHead(500).end(); // we will get it again
      }
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const secret = process.env.WEBHOOK_SECRET ?? "";
  webhookServer(secret, (event) => console.log(event.type, event.id, event.data)).listen(
    Number(process.env.PORT ?? 3000),
  );
}
