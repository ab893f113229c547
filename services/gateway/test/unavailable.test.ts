import { catalogueRpc } from "@cheese/contracts";
import { createInProcessBroker, serveRpc } from "@cheese/messaging";
import { describe, expect, it } from "vitest";
import { OPERATOR_KEY, testGateway } from "./support.ts";

const headers = { "x-api-key": OPERATOR_KEY };

describe("gateway when a service does not answer", () => {
  it("answers 503 with Retry-After when nobody serves the subject", async () => {
    const bus = createInProcessBroker().connect("gateway");
    const { app } = await testGateway(bus, 500);
    const response = await app.request("/v2/cheeses/1", { headers });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await response.json()).toMatchObject({ code: 503, type: "service_unavailable" });
    await bus.close();
  });

  it("answers 503 at the deadline instead of hanging when the service is stuck", async () => {
    const broker = createInProcessBroker();
    const bus = broker.connect("gateway");
    const stuck = broker.connect("catalogue");
    serveRpc(stuck, catalogueRpc.getCheese, { queue: "catalogue" }, () => new Promise(() => {}));
    const { app } = await testGateway(bus, 300);
    const started = Date.now();
    const response = await app.request("/v2/cheeses/1", { headers });
    expect(response.status).toBe(503);
    expect(Date.now() - started).toBeLessThan(2000);
    await bus.close();
  });

  it("turns an unexpected service failure into a 500 error body, not a crash", async () => {
    const broker = createInProcessBroker();
    const bus = broker.connect("gateway");
    const broken = broker.connect("catalogue");
    serveRpc(broken, catalogueRpc.getCheese, { queue: "catalogue" }, async () => {
      throw new Error("disk on fire");
    });
    const { app } = await testGateway(bus, 1000);
    const response = await app.request("/v2/cheeses/1", { headers });
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body).toEqual({ code: 500, type: "internal_error", message: "internal error" });
    await broken.close();
    await bus.close();
  });
});
