import { hasMetric, metricValue, scrape } from "@cheese/testing";
import { Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { serviceMetrics } from "./support/metrics.ts";
import { createCheese, type Headers, http, orderBody } from "./support/orders.ts";
import { OtlpReceiver } from "./support/otlp.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

const TRACE_ID = "5c1e2b3a4d5f60718293a4b5c6d7e8f9";
const CALLER_SPAN = "a1b2c3d4e5f60718";
const traceIdIn = (traceparent: unknown) =>
  /^00-([0-9a-f]{32})-[0-9a-f]{16}-0[01]$/.exec(String(traceparent))?.[1];

/**
 * What an operator can see of the running system: each process's /metrics on its health port,
 * and one trace per request across every process it reaches, exported over OTLP/HTTP to a
 * collector (here one on 127.0.0.1 in the test).
 */
describe("metrics and traces of the running system", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let collector: OtlpReceiver;
  let operator: { apiKey: Headers; bearer: Headers };
  let api: ReturnType<typeof http>;

  beforeAll(async () => {
    receiver = await Receiver.start();
    collector = await OtlpReceiver.start();
    system = await startSystem({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        // The SDK's batch exporter otherwise waits 5 s between exports.
        OTEL_BSP_SCHEDULE_DELAY: "100",
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,100ms,100ms",
        WEBHOOK_TIMEOUT: "1s",
        // Each service logs its health port at start at info.
        LOG_LEVEL: "info",
      },
    });
    operator = await operatorHeaders(system);
    api = http(system);
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
    await collector?.close();
  });

  const { healthOf, total, largest } = serviceMetrics(() => system);

  it("follows an order from the gateway request to the webhook delivery in one trace", async () => {
    const hook = await json(
      await api.post(
        "/webhooks",
        { url: receiver.url("/orders"), events: ["order.placed"] },
        operator.apiKey,
      ),
    );
    expect(hook.id).toEqual(expect.any(Number));
    const cheese = await createCheese(system, operator.bearer);
    const placed = await api.post("/store/order", orderBody([{ cheeseId: cheese.id, quantity: 1 }]), {
      ...operator.bearer,
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(placed.status).toBe(201);

    const [delivery] = await receiver.waitFor("/orders", 1);
    expect(JSON.parse(delivery!.body)).toMatchObject({ type: "order.placed" });
    expect(traceIdIn(delivery!.headers.traceparent)).toBe(TRACE_ID);

    // Every process on the way recorded its part of the trace (ordering asks the catalogue for
    // the cheese's price), down to the attempt that sent the delivery.
    const attemptSpan = () =>
      collector.trace(TRACE_ID).find((span) => span.service === "notification" && span.kind === 3);
    await expect
      .poll(
        () => ({
          services: new Set(collector.trace(TRACE_ID).map((span) => span.service)),
          sent: attemptSpan() !== undefined,
        }),
        { timeout: 20_000 },
      )
      .toEqual({ services: new Set(["gateway", "catalogue", "ordering", "notification"]), sent: true });
    const spans = collector.trace(TRACE_ID);
    const gateway = spans.find((span) => span.service === "gateway" && span.name === "POST /v2/store/order");
    expect(gateway?.parentSpanId).toBe(CALLER_SPAN);
    const placing = spans.find((span) => span.service === "ordering" && span.kind === 2);
    expect(placing?.parentSpanId).toBe(gateway?.spanId);
    const sending = attemptSpan();
    expect(sending?.name).toBe("POST webhook order.placed");
    expect(delivery!.headers.traceparent).toContain(sending!.spanId);
  });

  it("carries the caller's trace into the customer service as well, and on with its event", async () => {
    const traceId = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    // Notification takes the customer's events once a registration wants one of their kinds.
    const hook = await api.post(
      "/webhooks",
      { url: receiver.url("/customers"), events: ["customer.created"] },
      operator.apiKey,
    );
    expect(hook.status).toBe(201);
    const username = `traced_${Date.now()}`;
    const created = await api.post(
      "/customer",
      { username, email: `${username}@example.com`, password: "correct horse battery" },
      { traceparent: `00-${traceId}-${CALLER_SPAN}-01` },
    );
    expect(created.status).toBe(201);
    await expect
      .poll(() => new Set(collector.trace(traceId).map((span) => span.service)), { timeout: 20_000 })
      // The customer's event goes on to the notification service in the same trace.
      .toEqual(new Set(["gateway", "customer", "notification"]));
    const gateway = collector.trace(traceId).find((span) => span.service === "gateway");
    const customer = collector.trace(traceId).find((span) => span.service === "customer" && span.kind === 2);
    expect(customer?.parentSpanId).toBe(gateway?.spanId);
  });

  it("counts on each service's /metrics what it was asked to do", async () => {
    const cheese = await createCheese(system, operator.bearer);
    const route = { method: "GET", route: "/v2/cheeses/:cheeseId" };
    const served = (status: string) => total("gateway", "cheese_http_requests_total", { ...route, status });
    const lookups = () =>
      total("catalogue", "cheese_rpc_server_duration_seconds_count", { subject: "catalogue.cheese.get" });
    const hits = () =>
      total("gateway", "cheese_gateway_read_cache_total", { read: "getCheese", outcome: "hit" });
    const okBefore = await served("200");
    const missingBefore = await served("404");
    const lookupsBefore = await lookups();
    const hitsBefore = await hits();
    for (let i = 0; i < 4; i++)
      expect((await api.get(`/cheeses/${cheese.id}`, operator.apiKey)).status).toBe(200);
    expect((await api.get("/cheeses/999999", operator.apiKey)).status).toBe(404);
    expect((await served("200")) - okBefore).toBe(4);
    expect((await served("404")) - missingBefore).toBe(1);

    // The catalogue answered the first lookup of the cheese (per gateway replica) and the 404; the
    // gateway's read cache the repeats. It appended the cheese; its projection is current.
    const cached = (await hits()) - hitsBefore;
    expect(cached).toBeGreaterThanOrEqual(2);
    expect((await lookups()) - lookupsBefore + cached).toBe(5);
    expect(await total("catalogue", "cheese_events_appended_total", { category: "cheese" })).toBeGreaterThan(
      0,
    );
    const catalogue = await scrape(healthOf("catalogue")[0]!);
    expect(hasMetric(catalogue, "cheese_projection_lag_seconds")).toBe(true);
    expect(metricValue(catalogue, "cheese_events_projected_total")).toBeGreaterThan(0);
    expect(catalogue).toMatch(/^process_resident_memory_bytes \d/m);

    // A receiver that always fails: every attempt counted as an http_error, then a dead letter.
    receiver.behave("/failing", { status: 500 });
    const hook = await json(
      await api.post(
        "/webhooks",
        { url: receiver.url("/failing"), events: ["order.placed"] },
        operator.apiKey,
      ),
    );
    const failedBefore = await total("notification", "cheese_webhook_attempts_total", {
      outcome: "http_error",
    });
    const deadBefore = await largest("notification", "cheese_webhook_dead_letters");
    expect((await api.post(`/webhooks/${hook.id}/test`, {}, operator.apiKey)).status).toBe(202);
    await receiver.waitFor("/failing", 3);
    await expect.poll(() => largest("notification", "cheese_webhook_dead_letters")).toBe(deadBefore + 1);
    expect(
      (await total("notification", "cheese_webhook_attempts_total", { outcome: "http_error" })) -
        failedBefore,
    ).toBe(3);
  });
});
