import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../src/env.ts";
import { operatorOnly } from "../src/routes/operator.ts";

// The webhook routes with the notification service behind them: e2e/webhooks-http.test.ts.

// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
const read = (response: Response): Promise<any> => response.json();

describe("webhook registrations are the operator's", () => {
  it("refuses a customer's own API key with 403", async () => {
    const app = new Hono<GatewayEnv>();
    app.use(async (c, next) => {
      c.set("caller", { kind: "customer", id: "cust:1", plan: "free", scopes: new Set(), via: "api_key" });
      await next();
    });
    app.get("/webhooks", operatorOnly("only operator API keys may manage webhooks"), (c) => c.text("listed"));
    const response = await app.request("/webhooks");
    expect(response.status).toBe(403);
    expect(await read(response)).toMatchObject({ code: 403, type: "forbidden" });
  });
});
