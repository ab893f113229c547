import { type Cheese, catalogueRpc } from "@cheese/contracts";
import { createInProcessBroker, type Headers, RemoteError, serveRpc } from "@cheese/messaging";
import { createLogger, metricsRegistry, SpanKind, startTracing } from "@cheese/service-kit";
import { InMemorySpanExporter } from "@cheese/service-kit/testing";
import { hasMetric, metricValue } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { OPERATOR_KEY, testGateway } from "./support.ts";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
/** A W3C traceparent of the given trace, with any span id but the caller's. */
const childOf = (traceId: string) => new RegExp(`^00-${traceId}-(?!${CALLER_SPAN})[0-9a-f]{16}-0[01]$`);
const anyTraceparent = /^00-([0-9a-f]{32})-[0-9a-f]{16}-0[01]$/;

/** The gateway's observation of each request: counted by route template and status, and traced. */
describe("gateway metrics and traces", () => {
  const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  /** The headers of every request the catalogue stand-in got. */
  const received: Headers[] = [];
  const cheese: Cheese = { id: 1, name: "Comté", status: "available", pricePerKg: 30 };
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  let limited: Awaited<ReturnType<typeof testGateway>>;
  const catalogue = serveRpc(
    broker.connect("catalogue"),
    catalogueRpc.getCheese,
    { queue: "catalogue" },
    async ({ cheeseId }, { headers }) => {
      received.push(headers);
      if (cheeseId !== 1)
        throw new RemoteError({ status: 404, type: "not_found", message: "no such cheese" });
      return { cheese, revision: 0 };
    },
  );

  beforeAll(async () => {
    gateway = await testGateway(broker.connect("gateway"));
    // The operator key is on the pro plan: a burst of 2 here.
    limited = await testGateway(broker.connect("gateway-limited"), 1000, {
      rateLimits: { ...specPlanLimits, pro: { burst: 2, perHour: 10 } },
    });
  });
  afterAll(async () => {
    await catalogue.close();
    gateway.cleanup();
    limited.cleanup();
  });

  const get = (app: typeof gateway.app, path: string, headers: Record<string, string> = {}) =>
    app.request(path, { headers: { "x-api-key": OPERATOR_KEY, ...headers } });
  const metrics = () => metricsRegistry.metrics();
  const requests = (text: string, route: string, status: number) =>
    metricValue(text, "cheese_http_requests_total", { method: "GET", route, status: String(status) });

  it("counts requests by method, route template and status; a path no route takes is `unmatched`", async () => {
    const before = await metrics();
    for (let i = 0; i < 3; i++) expect((await get(gateway.app, "/v2/cheeses/1")).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await get(gateway.app, "/v2/cheeses/2")).status).toBe(404);
    expect((await get(gateway.app, "/v2/no/such/thing")).status).toBe(404);
    const after = await metrics();

    expect(
      requests(after, "/v2/cheeses/:cheeseId", 200) - requests(before, "/v2/cheeses/:cheeseId", 200),
    ).toBe(3);
    expect(
      requests(after, "/v2/cheeses/:cheeseId", 404) - requests(before, "/v2/cheeses/:cheeseId", 404),
    ).toBe(2);
    expect(requests(after, "unmatched", 404) - requests(before, "unmatched", 404)).toBe(1);
    const latencies = (text: string) =>
      metricValue(text, "cheese_http_request_duration_seconds_count", {
        method: "GET",
        route: "/v2/cheeses/:cheeseId",
        status: "200",
      });
    expect(latencies(after) - latencies(before)).toBe(3);
    // Raw paths never become labels.
    expect(hasMetric(after, "cheese_http_requests_total", { route: "/v2/cheeses/1" })).toBe(false);
    expect(hasMetric(after, "cheese_http_requests_total", { route: "/v2/no/such/thing" })).toBe(false);

    const calls = (text: string, outcome: string) =>
      metricValue(text, "cheese_rpc_client_duration_seconds_count", {
        subject: catalogueRpc.getCheese.subject,
        outcome,
      });
    expect(calls(after, "ok") - calls(before, "ok")).toBe(3);
    expect(calls(after, "refused") - calls(before, "refused")).toBe(2);
  });

  it("labels a request by the route that answered it, of several routes matching its path", async () => {
    const before = await metrics();
    // `/cheeses/findByStatus` is added before `/cheeses/{cheeseId}`: it answers (here 503, as
    // no catalogue serves it) and is the one counted.
    await get(gateway.app, "/v2/cheeses/findByStatus?status=available");
    const after = await metrics();
    const counted = (text: string, route: string) =>
      metricValue(text, "cheese_http_requests_total", { method: "GET", route });
    expect(counted(after, "/v2/cheeses/findByStatus") - counted(before, "/v2/cheeses/findByStatus")).toBe(1);
    expect(counted(after, "/v2/cheeses/:cheeseId") - counted(before, "/v2/cheeses/:cheeseId")).toBe(0);
  });

  it("counts rate-limit refusals by plan, and the 429s under the route they were headed for", async () => {
    const before = await metrics();
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(limited.app, "/v2/cheeses/1")).status);
    const after = await metrics();

    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    const refusals = (text: string) => metricValue(text, "cheese_rate_limit_refusals_total", { plan: "pro" });
    expect(refusals(after) - refusals(before)).toBe(3);
    expect(
      requests(after, "/v2/cheeses/:cheeseId", 429) - requests(before, "/v2/cheeses/:cheeseId", 429),
    ).toBe(3);
  });

  it("carries the caller's traceparent on to the services, under the gateway's span", async () => {
    received.length = 0;
    const response = await get(gateway.app, "/v2/cheeses/1", {
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
    });
    expect(response.status).toBe(200);
    expect(received[0]?.traceparent).toMatch(childOf(TRACE_ID));
    // The request's ids travel beside it, as before.
    expect(received[0]?.["x-request-id"]).toBe(response.headers.get("x-request-id"));
  });

  it("starts a new trace for a request without a traceparent, or with one that is not valid", async () => {
    received.length = 0;
    await get(gateway.app, "/v2/cheeses/1");
    await get(gateway.app, "/v2/cheeses/1");
    await get(gateway.app, "/v2/cheeses/1", { traceparent: "00-not-a-trace-01" });
    await get(gateway.app, "/v2/cheeses/1", { traceparent: `00-${"0".repeat(32)}-${CALLER_SPAN}-01` });
    const traceIds = received.map((headers) => anyTraceparent.exec(headers.traceparent ?? "")?.[1]);
    expect(traceIds).toHaveLength(4);
    for (const traceId of traceIds) expect(traceId).toMatch(/^(?!0{32})[0-9a-f]{32}$/);
    expect(new Set(traceIds).size).toBe(4);
  });

  it("records the request's span, named by its route, when tracing is on", async () => {
    const spans = new InMemorySpanExporter();
    const tracing = startTracing("gateway", { exporter: spans });
    try {
      received.length = 0;
      await get(gateway.app, "/v2/cheeses/1", { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` });
      const [span] = spans.getFinishedSpans();
      expect(span).toMatchObject({ name: "GET /v2/cheeses/:cheeseId", kind: SpanKind.SERVER });
      expect(span!.attributes).toMatchObject({
        "http.route": "/v2/cheeses/:cheeseId",
        "http.response.status_code": 200,
      });
      expect(span!.spanContext().traceId).toBe(TRACE_ID);
      expect(span!.parentSpanContext?.spanId).toBe(CALLER_SPAN);
      // The service got the gateway's span as its parent, sampled.
      expect(received[0]?.traceparent).toBe(`00-${TRACE_ID}-${span!.spanContext().spanId}-01`);
      // Health probes make no spans.
      await gateway.app.request("/healthz");
      expect(spans.getFinishedSpans()).toHaveLength(1);
    } finally {
      await tracing.stop();
    }
  });
});
