// A webhook receiver for trying the system out (the README's tour): listens on 127.0.0.1,
// prints one line per delivery and answers 204. With WEBHOOK_SECRET (the `secret` the
// registration answered with) it checks the Standard Webhooks signature of each delivery, as a
// real receiver must (docs/webhooks.md "Verifying, as a receiver").
//
//   WEBHOOK_SECRET=whsec_… node scripts/receive-webhooks.mjs [port, default 4000]
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 4000);
const secret = process.env.WEBHOOK_SECRET;

/** True when one of the `v1,` signatures is HMAC-SHA256 of `{id}.{timestamp}.{body}`. */
function signatureValid(headers, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`;
  const expected = Buffer.from(createHmac("sha256", key).update(signed).digest("base64"));
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .map((part) => Buffer.from(part.replace(/^v1,/, "")))
    .some((given) => given.length === expected.length && timingSafeEqual(given, expected));
}

createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    let event = {};
    try {
      event = JSON.parse(body);
    } catch {
      // not JSON: shown as it came
    }
    const check = secret ? (signatureValid(request.headers, body) ? "signature ok" : "BAD SIGNATURE") : "";
    console.log(
      `received ${event.type ?? request.headers["x-cheese-event"] ?? "?"} ${event.id ?? ""} ${check}`.trim(),
      JSON.stringify(event.data ?? body),
    );
    response.writeHead(204).end();
  });
}).listen(port, "127.0.0.1", () => console.log(`receiving webhooks on http://127.0.0.1:${port}/`));
