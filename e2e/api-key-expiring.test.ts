import { envelopeOf, type ReceivedEnvelope, type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

const LIFETIME_MS = 3_600_000;
/** A key enters its warning window this long after it is issued. */
const DUE_AFTER_MS = 3_000;
const WARNING_MS = LIFETIME_MS - DUE_AFTER_MS;

/**
 * api_key.expiring end to end (docs/webhooks.md: sent 7 days before an API key expires):
 * a real customer's real API key, the customer service's expiry timer, the relay, the
 * notification service and a signed delivery to a real receiver on 127.0.0.1.
 *
 * Keys live an hour (API_KEY_LIFETIME) and are announced API_KEY_EXPIRY_WARNING = 1 h - 3 s before
 * they expire, so a new key enters its window 3 s after it is issued. Those 3 s let the test
 * revoke a key before it is due, so "a revoked key is never announced" does not depend on beating
 * its timer.
 */
describe("api_key.expiring over HTTP, delivered to a real receiver", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let customer: TestCustomer;
  let hook: { id: number; secret: string };

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_TIMEOUT: "2s",
        API_KEY_LIFETIME: `${LIFETIME_MS / 1000}s`,
        API_KEY_EXPIRY_WARNING: `${WARNING_MS / 1000}s`,
      },
    });
    operator = await operatorHeaders(system);
    const registered = await call("POST", "/webhooks", operator.apiKey, {
      url: receiver.url("/expiring"),
      events: ["api_key.expiring"],
    });
    expect(registered.status).toBe(201);
    hook = await json(registered);
    customer = await registerAndLogin(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  function call(method: string, path: string, headers: Record<string, string>, body?: unknown) {
    return fetch(`${system.baseUrl}${path}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }
  const naming = (keyId: number) =>
    receiver.requests("/expiring").filter((request: ReceivedRequest) => {
      const { data } = envelopeOf(request);
      return data?.key_id === String(keyId) || data?.key_id === keyId;
    });

  it("announces a live key once, signed, with its ids as strings and its expiry but not the key; never a revoked one", async () => {
    const issue = async () => {
      const response = await call("POST", `/customer/${customer.username}/apiKeys`, customer.bearer);
      expect(response.status).toBe(201);
      return (await json(response)) as {
        id: number;
        key: string;
        prefix: string;
        createdAt: string;
        expiresAt: string;
      };
    };
    const live = await issue();
    const revoked = await issue();
    expect(
      (await call("DELETE", `/customer/${customer.username}/apiKeys/${revoked.id}`, customer.bearer)).status,
    ).toBe(204);
    const revokedDueAt = Date.parse(revoked.expiresAt) - WARNING_MS;
    // Revoked before it entered its warning window, or this test would prove nothing about it.
    expect(Date.now()).toBeLessThan(revokedDueAt);

    // The live key: announced once its window opens.
    const liveDueAt = Date.parse(live.expiresAt) - WARNING_MS;
    await expect.poll(() => naming(live.id).length, { timeout: DUE_AFTER_MS + 15_000 }).toBeGreaterThan(0);
    const [request] = naming(live.id);
    expect(request!.receivedAt).toBeGreaterThanOrEqual(liveDueAt);

    const envelope = verifyWebhook(hook.secret, request!.rawBody, request!.headers) as ReceivedEnvelope;
    expect(request!.headers["x-cheese-event"]).toBe("api_key.expiring");
    expect(request!.headers["webhook-id"]).toBe(envelope.id);
    expect(envelope.type).toBe("api_key.expiring");
    expect(envelope.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(envelope.data).toEqual({
      customer_id: String(customer.id),
      username: customer.username,
      key_id: String(live.id),
      key_prefix: live.prefix,
      expires_at: live.expiresAt,
    });
    expect(Date.parse(envelope.data.expires_at) - Date.parse(live.createdAt)).toBe(LIFETIME_MS);
    expect(request!.body).not.toContain(live.key);

    // A key issued now is announced after the revoked key's window opened, when the live and the
    // revoked key were due already. The notification service plans deliveries in
    // the order the events come; once every delivery planned so far has been delivered, the
    // receiver has all it will get about the first two keys.
    const later = await issue();
    await expect.poll(() => naming(later.id).length, { timeout: DUE_AFTER_MS + 15_000 }).toBeGreaterThan(0);
    expect(Date.parse(later.expiresAt) - WARNING_MS).toBeGreaterThan(revokedDueAt);
    const planned = async () =>
      (await json(await call("GET", `/webhooks/${hook.id}/deliveries`, operator.apiKey))).items as {
        status: string;
      }[];
    await expect.poll(async () => (await planned()).every((d) => d.status === "delivered")).toBe(true);
    expect(naming(live.id)).toHaveLength(1);
    expect(naming(revoked.id)).toHaveLength(0);
    const all = receiver.requests("/expiring");
    expect(new Set(all.map((r) => envelopeOf(r).id)).size).toBe(all.length);
    for (const r of all) {
      expect(r.body).not.toContain(live.key);
      expect(r.body).not.toContain(revoked.key);
    }

    const deliveries = (await json(await call("GET", `/webhooks/${hook.id}/deliveries`, operator.apiKey)))
      .items as { eventId: string; eventType: string; status: string }[];
    const forLive = deliveries.filter((d) => d.eventId === envelope.id);
    expect(forLive).toHaveLength(1);
    expect(forLive[0]).toMatchObject({ eventType: "api_key.expiring", status: "delivered" });
  });
});
