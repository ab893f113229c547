// A webhook receiver for trying the system out (the README's tour): listens on 127.0.0.1,
// prints one line per delivery and answers 204. With WEBHOOK_SECRET (the `secret` the
// registration answered with) it verifies each delivery as a real receiver must, with
// `@cheese/webhook-signature` (docs/webhooks.md "Verifying, as a receiver"): both signatures,
// and a `webhook-timestamp` within 5 minutes of now. It runs the package's build, which
// `pnpm start` (or `pnpm build`) makes.
//
//   WEBHOOK_SECRET=whsec_… node scripts/receive-webhooks.mjs [port, default 4000]
import { createServer } from "node:http";
import { verifyWebhook } from "@cheese/webhook-signature";

const port = Number(process.argv[2] ?? 4000);
const secret = process.env.WEBHOOK_SECRET;

/** "signature ok", or why the delivery would be refused. */
function check(body, headers) {
  try {
    verifyWebhook(secret, body, headers);
    return "signature ok";
  } catch (error) {
    return `BAD SIGNATURE (${error.message})`;
  }
}

createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const raw = Buffer.concat(chunks);
    const body = raw.toString("utf8");
    let event = {};
    try {
      event = JSON.parse(body);
    } catch {
      // not JSON: shown as it came
    }
    const verdict = secret ? check(raw, request.headers) : "";
    console.log(
      `received ${event.type ?? request.headers["x-cheese-event"] ?? "?"} ${event.id ?? ""} ${verdict}`.trim(),
      JSON.stringify(event.data ?? body),
    );
    response.writeHead(204).end();
  });
}).listen(port, "127.0.0.1", () => console.log(`receiving webhooks on http://127.0.0.1:${port}/`));
