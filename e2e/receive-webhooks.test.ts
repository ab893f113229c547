import { signWebhook } from "@cheese/webhook-signature";
import { afterAll, describe, expect, it } from "vitest";
import { testListenPort } from "./support/ports.ts";
import { shell } from "./support/shell.ts";

/**
 * `scripts/receive-webhooks.mjs`, the README tour's receiver, verifies as a real receiver must:
 * a delivery signed with the registration's secret passes; another secret, a changed body or a
 * `webhook-timestamp` older than 5 minutes (a replay) is refused.
 */
describe("the tour's webhook receiver script", () => {
  const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";
  let receiver: ReturnType<typeof shell> | undefined;
  afterAll(async () => {
    if (!receiver) return;
    const exited = receiver.exited;
    process.kill(-receiver.child.pid!, "SIGTERM");
    await exited;
  });

  it("says signature ok only for a fresh delivery signed with its secret", async () => {
    const port = await testListenPort();
    receiver = shell(`exec node scripts/receive-webhooks.mjs ${port}`, "ignore", { WEBHOOK_SECRET: secret });
    await expect.poll(() => receiver!.output()).toContain("receiving webhooks on");
    const now = Math.floor(Date.now() / 1000);
    const deliver = async (id: string, body: string, headers: Record<string, string>) => {
      const response = await fetch(`http://127.0.0.1:${port}/hooks`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body,
      });
      expect(response.status).toBe(204);
      await expect.poll(() => receiver!.output()).toMatch(new RegExp(`received webhook\\.test ${id} .*\\n`));
      return receiver!
        .output()
        .split("\n")
        .find((line) => line.includes(` ${id} `))!;
    };
    const event = (id: string) =>
      JSON.stringify({ id, type: "webhook.test", created_at: new Date().toISOString(), data: {} });

    const fresh = event("evt_fresh");
    expect(await deliver("evt_fresh", fresh, signWebhook(secret, fresh, { id: "evt_fresh" }))).toContain(
      "signature ok",
    );

    const stale = event("evt_stale");
    const replayed = signWebhook(secret, stale, { id: "evt_stale", timestampSeconds: now - 301 });
    expect(await deliver("evt_stale", stale, replayed)).toMatch(/BAD SIGNATURE \(.*too far from now/);

    const other = event("evt_other");
    const otherSecret = signWebhook("whsec_3q2+7w8kVw1cKp0o2Ck9xq9VfEo0Q3B6v7yYlEoNnXc=", other, {
      id: "evt_other",
    });
    expect(await deliver("evt_other", other, otherSecret)).toContain("BAD SIGNATURE");

    const changed = event("evt_changed");
    const signedBefore = signWebhook(secret, changed, { id: "evt_changed" });
    expect(await deliver("evt_changed", changed.replace("{}", '{"x":1}'), signedBefore)).toContain(
      "BAD SIGNATURE",
    );
  });
});
