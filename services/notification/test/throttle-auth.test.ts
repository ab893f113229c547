import { MASKED_SECRET, notificationRpc, WebhookInput, WebhookPatch } from "@cheese/contracts";
import { createInProcessBroker } from "@cheese/messaging";
import { perSecond, SharedBuckets } from "@cheese/rate-limits";
import { createLogger } from "@cheese/service-kit";
import { ManualClock, type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WEBHOOK_THROTTLE } from "../src/delivery/throttle-gate.ts";
import { webhookDecider } from "../src/domain/webhook.ts";
import { notificationService } from "../src/main.ts";

const at = "2026-11-22T10:00:00.000Z";
const url = "http://127.0.0.1:9/hooks";
const oauth2 = {
  type: "oauth2_client_credentials" as const,
  tokenUrl: "http://127.0.0.1:9/token",
  clientId: "cheese-hooks",
  clientSecret: "client-secret-value-1",
  scope: "hooks:write",
};

describe("the shared throttle", () => {
  it("gives one slot to one of two replicas, and the other the time to ask again", async () => {
    const broker = createInProcessBroker();
    const clock = new ManualClock(new Date(at));
    const logger = createLogger("notification", "silent");
    const first = new SharedBuckets(broker.connect(), logger, clock, WEBHOOK_THROTTLE);
    const second = new SharedBuckets(broker.connect(), logger, clock, WEBHOOK_THROTTLE);

    const answers = await Promise.all([first.admit("7", perSecond(4)), second.admit("7", perSecond(4))]);
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(1);
    expect(answers.filter((answer) => !answer.allowed && answer.retryAfterMs === 250)).toHaveLength(1);
    // Another registration has slots of its own.
    expect((await second.admit("8", perSecond(4))).allowed).toBe(true);

    await clock.advance(249);
    expect((await first.admit("7", perSecond(4))).allowed).toBe(false);
    await clock.advance(1);
    const later = await Promise.all([second.admit("7", perSecond(4)), first.admit("7", perSecond(4))]);
    expect(later.filter((answer) => answer.allowed)).toHaveLength(1);
  });

  it("holds attempts back, to be asked again a second later, while NATS cannot be reached", async () => {
    const bus = createInProcessBroker().connect();
    await bus.close();
    const throttle = new SharedBuckets(
      bus,
      createLogger("notification", "silent"),
      undefined,
      WEBHOOK_THROTTLE,
    );
    expect(await throttle.admit("7", perSecond(4))).toMatchObject({ allowed: false, retryAfterMs: 1000 });
  });
});

describe("throttle and receiver auth at registration (given/when/then)", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(notificationService, {
      start: at,
      env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_DELAYS: "1h" },
    });
  });
  afterEach(async () => {
    await spec.stop();
  });

  it("records a throttle and static headers, answers the header names with masked values, and keeps the values only sealed", async () => {
    await spec
      .given()
      .when(notificationRpc.createWebhook, {
        url,
        events: ["order.placed"],
        description: null,
        rateLimit: { perSecond: 5 },
        auth: { type: "headers", headers: { "X-Api-Key": "k_live_secret_123" } },
      })
      .thenReturns({
        reply: {
          rateLimit: { perSecond: 5 },
          auth: { type: "headers", headers: { "X-Api-Key": MASKED_SECRET } },
        },
      });
    const stored = JSON.stringify(await spec.store.readStream("webhook-1"));
    expect(stored).toContain("X-Api-Key");
    expect(stored).not.toContain("k_live_secret_123");
    const listed = await spec.given().when(notificationRpc.listWebhooks, { limit: 10 }).thenReturns({});
    expect(JSON.stringify(listed)).not.toContain("k_live_secret_123");
  });

  it("answers an OAuth2 registration without its client secret; PATCH replaces the auth and removes the throttle", async () => {
    await spec
      .given()
      .when(notificationRpc.createWebhook, {
        url,
        events: ["order.placed"],
        description: null,
        rateLimit: { perSecond: 3 },
        auth: oauth2,
      })
      .thenReturns({
        reply: {
          auth: {
            type: "oauth2_client_credentials",
            tokenUrl: oauth2.tokenUrl,
            clientId: "cheese-hooks",
            clientSecret: MASKED_SECRET,
            scope: "hooks:write",
          },
        },
      });
    expect(JSON.stringify(await spec.store.readStream("webhook-1"))).not.toContain(oauth2.clientSecret);

    const changed = await spec
      .given()
      .when(notificationRpc.updateWebhook, {
        webhookId: 1,
        rateLimit: null,
        auth: { type: "headers", headers: { Authorization: "Token abc" } },
      })
      .thenReturns({
        reply: { rateLimit: null, auth: { type: "headers", headers: { Authorization: MASKED_SECRET } } },
      });
    expect(JSON.stringify(changed)).not.toContain("Token abc");
    await spec
      .given()
      .when(notificationRpc.updateWebhook, { webhookId: 1, auth: null })
      .thenReturns({ reply: { auth: null } });
  });
});

describe("the token URL passes the webhook URL's address rules", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(notificationService, { start: at, env: { WEBHOOK_RETRY_DELAYS: "1h" } });
  });
  afterEach(async () => {
    await spec.stop();
  });

  it("refuses a loopback or plain-http token URL, naming auth.tokenUrl", async () => {
    for (const tokenUrl of ["https://127.0.0.1/token", "http://auth.example.com/token"]) {
      await spec
        .given()
        .when(notificationRpc.createWebhook, {
          url: "https://93.184.215.14/hooks",
          events: ["order.placed"],
          description: null,
          auth: { ...oauth2, tokenUrl },
        })
        .thenRefuses({ status: 422, errors: [{ field: "auth.tokenUrl", message: expect.any(String) }] });
    }
  });
});

describe("the API's shapes of rateLimit and auth", () => {
  const base = { url: "https://example.com/hooks", events: ["order.placed"] };
  const fields = (body: unknown, schema: typeof WebhookInput | typeof WebhookPatch = WebhookInput) => {
    const parsed = schema.safeParse(body);
    return parsed.success ? [] : parsed.error.issues.map((issue) => issue.path.join("."));
  };

  it("takes 1 to 1000 whole attempts per second", () => {
    expect(fields({ ...base, rateLimit: { perSecond: 1 } })).toEqual([]);
    expect(fields({ ...base, rateLimit: { perSecond: 1000 } })).toEqual([]);
    for (const perSecond of [0, 1001, 1.5, "2"])
      expect(fields({ ...base, rateLimit: { perSecond } })).toEqual(["rateLimit.perSecond"]);
    expect(fields({ rateLimit: { perSecond: 0 } }, WebhookPatch)).toEqual(["rateLimit.perSecond"]);
  });

  it("refuses hop-by-hop, signature and malformed header names, and values with line breaks", () => {
    const headers = (h: Record<string, string>) => fields({ ...base, auth: { type: "headers", headers: h } });
    expect(headers({ "X-Api-Key": "k 1", Authorization: "Bearer x" })).toEqual([]);
    for (const name of [
      "Connection",
      "transfer-encoding",
      "Host",
      "webhook-signature",
      "X-Cheese-Event",
      "a b",
      "",
    ])
      expect(headers({ [name]: "v" })).toEqual([`auth.headers.${name}`]);
    expect(headers({ "X-Key": "a", "x-key": "b" })).toEqual(["auth.headers"]);
    expect(headers({ "X-Api-Key": "v\r\nX-Injected: 1" })).toEqual(["auth.headers.X-Api-Key"]);
    expect(headers({})).toEqual(["auth.headers"]);
  });

  it("needs an absolute token URL and a client id and secret", () => {
    expect(fields({ ...base, auth: oauth2 })).toEqual([]);
    expect(fields({ ...base, auth: { ...oauth2, tokenUrl: "not a url" } })).toEqual(["auth.tokenUrl"]);
    const { clientSecret: _, ...noSecret } = oauth2;
    expect(fields({ ...base, auth: noSecret })).toEqual(["auth.clientSecret"]);
  });
});

describe("the registration decider", () => {
  it("records a throttle change only when it changes", () => {
    const state = webhookDecider.evolve(webhookDecider.initialState(), {
      type: "WebhookRegistered",
      data: {
        webhookId: 1,
        url,
        events: ["order.placed"],
        description: null,
        secret: { alg: "A256GCM", iv: "", tag: "", data: "" },
        signatureAlgorithms: ["hmac-sha256"],
        rateLimit: { perSecond: 2 },
        createdAt: at,
      },
    });
    const update = (changes: object) =>
      webhookDecider.decide({ type: "Update", webhookId: 1, changes, now: at }, state);
    expect(update({ rateLimit: { perSecond: 2 } })).toEqual([]);
    expect(update({ auth: null })).toEqual([]);
    expect(update({ rateLimit: null })).toEqual([
      { type: "WebhookUpdated", data: { webhookId: 1, rateLimit: null, updatedAt: at } },
    ]);
  });
});
