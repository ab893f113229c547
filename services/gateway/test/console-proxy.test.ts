import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

describe("/console, forwarded to the console application", () => {
  /** A stand-in console: says what it was asked, and redirects as the real one does. */
  const consoleApp = new Hono()
    .get("/console", (c) => c.redirect("http://127.0.0.1:8080/console/webhooks", 303))
    .all("/console/*", async (c) =>
      c.json(
        { method: c.req.method, path: c.req.path, query: c.req.query(), body: await c.req.text() },
        201,
        {
          "set-cookie": "console_session=abc; Path=/console; HttpOnly",
        },
      ),
    );
  let server: ReturnType<typeof serve>;
  let gateway: Awaited<ReturnType<typeof testGateway>>;

  beforeAll(async () => {
    server = await new Promise((resolve) => {
      const started = serve({ fetch: consoleApp.fetch, hostname: "127.0.0.1", port: 0 }, () =>
        resolve(started),
      );
    });
    const { port } = server.address() as AddressInfo;
    gateway = await testGateway(undefined, 1000, { consoleUrl: `http://127.0.0.1:${port}` });
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    gateway.cleanup();
  });

  it("forwards method, path, query and body, and hands back the console's answer and cookies", async () => {
    const response = await gateway.app.request("/console/webhooks/7/pause?x=1", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "_csrf=t",
    });
    expect(response.status).toBe(201);
    expect(response.headers.get("set-cookie")).toContain("console_session=abc");
    expect(await response.json()).toEqual({
      method: "POST",
      path: "/console/webhooks/7/pause",
      query: { x: "1" },
      body: "_csrf=t",
    });
  });

  it("hands the browser the console's redirect rather than following it", async () => {
    const response = await gateway.app.request("/console");
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe("http://127.0.0.1:8080/console/webhooks");
  });

  it("answers 503 with the error body when the console does not answer", async () => {
    const down = await testGateway(undefined, 1000, { consoleUrl: "http://127.0.0.1:9" });
    const response = await down.app.request("/console/webhooks");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 503 });
    down.cleanup();
  });
});
