import { Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";
import { webhookCalls } from "./support/webhooks.ts";

const MASKED = "********";

/**
 * Receiver auth (docs/webhooks.md "Receiver auth") on the multi-process system: an OAuth2 client
 * credentials token from a local token endpoint, and static headers. The processes log at debug,
 * and no credential may be in what they print.
 */
describe("deliveries that authenticate to their receiver", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let auth: Awaited<ReturnType<typeof operatorHeaders>>;
  const { api, sendTest } = webhookCalls(() => ({ system, receiver, headers: auth.apiKey }));

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({
      env: {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,100ms,100ms",
        LOG_LEVEL: "debug",
        // One notification process: the token is cached per process (docs/webhooks.md).
        REPLICAS: "1",
      },
    });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  const delivered = (webhookId: number, deliveryId: number) =>
    expect
      .poll(
        async () =>
          (await json(await api("GET", `/webhooks/${webhookId}/deliveries/${deliveryId}`))).status as string,
        { timeout: 20_000 },
      )
      .toBe("delivered");

  it("gets a client credentials token once, reuses it, and gets a new one after the receiver answers 401", async () => {
    let issued = 0;
    receiver.behave("/oauth/token", () => ({
      status: 200,
      headers: { "content-type": "application/json", "cache-control": "no-store" },
      body: JSON.stringify({
        access_token: `at-${++issued}-e2e-secret`,
        token_type: "Bearer",
        expires_in: 3600,
      }),
    }));
    let accepted = "Bearer at-1-e2e-secret";
    receiver.behave("/oauth/hook", (request) => ({
      status: request.headers.authorization === accepted ? 204 : 401,
    }));
    const created = await api("POST", "/webhooks", {
      url: receiver.url("/oauth/hook"),
      events: ["webhook.test"],
      auth: {
        type: "oauth2_client_credentials",
        tokenUrl: receiver.url("/oauth/token"),
        clientId: "cheese-e2e",
        clientSecret: "client-secret-e2e-value",
        scope: "hooks",
      },
    });
    expect(created.status).toBe(201);
    const webhook = await json(created);
    expect(webhook.auth).toEqual({
      type: "oauth2_client_credentials",
      tokenUrl: receiver.url("/oauth/token"),
      clientId: "cheese-e2e",
      clientSecret: MASKED,
      scope: "hooks",
    });

    await delivered(webhook.id, await sendTest(webhook.id));
    await delivered(webhook.id, await sendTest(webhook.id));
    expect(receiver.requests("/oauth/token")).toHaveLength(1);
    const [tokenRequest] = receiver.requests("/oauth/token");
    expect(tokenRequest!.headers.authorization).toBe(
      `Basic ${Buffer.from("cheese-e2e:client-secret-e2e-value").toString("base64")}`,
    );
    expect(new URLSearchParams(tokenRequest!.body).get("grant_type")).toBe("client_credentials");

    accepted = "Bearer at-2-e2e-secret";
    const third = await sendTest(webhook.id);
    await delivered(webhook.id, third);
    expect(receiver.requests("/oauth/token")).toHaveLength(2);
    expect(receiver.requests("/oauth/hook").map((request) => request.headers.authorization)).toEqual([
      "Bearer at-1-e2e-secret",
      "Bearer at-1-e2e-secret",
      "Bearer at-1-e2e-secret",
      "Bearer at-2-e2e-secret",
    ]);
    // The operator sees the request as sent, its credential redacted.
    const detail = await json(await api("GET", `/webhooks/${webhook.id}/deliveries/${third}`));
    expect(detail.attempts.at(-1).request.headers.authorization).toBe("[redacted]");

    const shown = JSON.stringify(await json(await api("GET", `/webhooks/${webhook.id}`)));
    const output = system.output();
    expect(output).toContain("webhook delivered");
    for (const secret of ["client-secret-e2e-value", "at-1-e2e-secret", "at-2-e2e-secret"]) {
      expect(shown).not.toContain(secret);
      expect(output).not.toContain(secret);
      expect(JSON.stringify(detail)).not.toContain(secret);
    }
  });

  it("sends static headers, answers their names with masked values, and never prints a value", async () => {
    const created = await api("POST", "/webhooks", {
      url: receiver.url("/static"),
      events: ["webhook.test"],
      auth: { type: "headers", headers: { "X-Api-Key": "static-e2e-value-7", "X-Tenant": "cheese" } },
    });
    expect(created.status).toBe(201);
    const webhook = await json(created);
    expect(webhook.auth).toEqual({ type: "headers", headers: { "X-Api-Key": MASKED, "X-Tenant": MASKED } });

    const deliveryId = await sendTest(webhook.id);
    const [request] = await receiver.waitFor("/static", 1, 20_000);
    expect(request!.headers["x-api-key"]).toBe("static-e2e-value-7");
    expect(request!.headers["x-tenant"]).toBe("cheese");
    await delivered(webhook.id, deliveryId);

    const detail = await json(await api("GET", `/webhooks/${webhook.id}/deliveries/${deliveryId}`));
    expect(detail.attempts[0].request.headers["X-Api-Key"]).toBe("[redacted]");
    const listed = JSON.stringify(await json(await api("GET", "/webhooks?limit=100")));
    for (const text of [listed, JSON.stringify(detail), system.output()])
      expect(text).not.toContain("static-e2e-value-7");
  });

  it("refuses a token URL that is not an absolute URL, naming auth.tokenUrl", async () => {
    const response = await api("POST", "/webhooks", {
      url: receiver.url("/never"),
      events: ["webhook.test"],
      auth: {
        type: "oauth2_client_credentials",
        tokenUrl: "file:///etc/passwd",
        clientId: "c",
        clientSecret: "s",
      },
    });
    expect(response.status).toBe(422);
    expect((await json(response)).errors.map((e: { field: string }) => e.field)).toContain("auth.tokenUrl");
  });
});
