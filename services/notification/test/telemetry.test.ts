import { randomUUID } from "node:crypto";
import { catalogueEvents, notificationRpc } from "@cheese/contracts";
import { callRpc, createInProcessBroker, type InProcessBroker, publishEvent } from "@cheese/messaging";
import { createLogger, type RunningService, SpanKind } from "@cheese/service-kit";
import { InMemorySpanExporter } from "@cheese/service-kit/testing";
import { metricValue, scrape, tempDir } from "@cheese/testing";
import { Receiver } from "@cheese/testing/receiver";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { start } from "../src/main.ts";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PUBLISHER_SPAN = "00f067aa0ba902b7";
const traceIdOf = (traceparent: unknown) =>
  /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(traceparent));

/**
 * What an operator sees of webhook deliveries: attempts by outcome and the dead letters on
 * /metrics, and each attempt in the trace of the event that caused it.
 */
describe("webhook delivery metrics and traces", () => {
  let broker: InProcessBroker;
  let data: ReturnType<typeof tempDir>;
  let receiver: Receiver;
  let service: RunningService | undefined;
  /** A new one per start: the service shuts its exporter down when it stops. */
  let spans: InMemorySpanExporter;

  beforeEach(async () => {
    broker = createInProcessBroker();
    data = tempDir("notification-telemetry");
    receiver = await Receiver.start();
    spans = new InMemorySpanExporter();
    service = await start({
      env: {
        DATA_DIR: data.path,
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,100ms,100ms",
        WEBHOOK_TIMEOUT: "1s",
      },
      bus: broker.connect("notification"),
      logger: createLogger("notification", "silent"),
      spanExporter: spans,
    });
  });
  afterEach(async () => {
    await service?.stop();
    await receiver.close();
    data.remove();
  });

  const health = () => `http://127.0.0.1:${service!.healthPort}`;
  const bus = () => broker.connect("test");
  const register = (path: string) =>
    callRpc(
      bus(),
      notificationRpc.createWebhook,
      { url: receiver.url(path), events: ["cheese.new_arrival"], description: null },
      { timeoutMs: 5000 },
    );
  const cheeseAdded = (id: number, headers: Record<string, string> = {}) =>
    publishEvent(bus(), catalogueEvents.cheeseAdded, {
      id: randomUUID(),
      payload: { cheese: { id, name: `Cheese ${id}`, status: "available", organic: false } },
      headers,
    });

  it("counts attempts by outcome and shows the dead letters until they are replayed", async () => {
    receiver.behave("/failing", { status: 500 });
    const hook = await register("/failing");
    const attempts = async (outcome: string) =>
      metricValue(await scrape(health()), "cheese_webhook_attempts_total", { outcome });
    const deadLetters = async () => metricValue(await scrape(health()), "cheese_webhook_dead_letters");
    const failedBefore = await attempts("http_error");
    const succeededBefore = await attempts("success");
    expect(await deadLetters()).toBe(0);

    await cheeseAdded(1);
    await cheeseAdded(2);
    await receiver.waitFor("/failing", 6);
    await expect.poll(deadLetters).toBe(2);
    expect((await attempts("http_error")) - failedBefore).toBe(6);

    receiver.behave("/failing", { status: 204 });
    await callRpc(bus(), notificationRpc.replayDeliveries, { webhookId: hook.id }, { timeoutMs: 5000 });
    await expect.poll(async () => (await attempts("success")) - succeededBefore).toBe(2);
    expect(await deadLetters()).toBe(0);
  });

  it("delivers in the trace of the event that caused it: every attempt a span of it, sent as traceparent", async () => {
    receiver.behave("/traced", (_, count) => ({ status: count === 1 ? 503 : 200 }));
    await register("/traced");
    await cheeseAdded(3, { traceparent: `00-${TRACE_ID}-${PUBLISHER_SPAN}-01` });
    const requests = await receiver.waitFor("/traced", 2);

    const sent = requests.map((request) => traceIdOf(request.headers.traceparent));
    expect(sent.map((match) => match?.[1])).toEqual([TRACE_ID, TRACE_ID]);
    await expect
      .poll(() => spans.getFinishedSpans().filter((s) => s.kind === SpanKind.CLIENT).length)
      .toBe(2);
    const finished = spans.getFinishedSpans();
    const consumed = finished.find((s) => s.kind === SpanKind.CONSUMER);
    expect(consumed).toMatchObject({ name: "process events.catalogue.cheese.added" });
    expect(consumed!.parentSpanContext?.spanId).toBe(PUBLISHER_SPAN);
    const deliveries = finished.filter((s) => s.kind === SpanKind.CLIENT);
    for (const [i, span] of deliveries.entries()) {
      expect(span.name).toBe("POST webhook cheese.new_arrival");
      expect(span.spanContext().traceId).toBe(TRACE_ID);
      expect(span.parentSpanContext?.spanId).toBe(consumed!.spanContext().spanId);
      // The receiver got the attempt's own span as parent.
      expect(sent[i]?.[2]).toBe(span.spanContext().spanId);
    }
    expect(deliveries.map((s) => s.attributes["http.response.status_code"])).toEqual([503, 200]);
    expect(deliveries[0]!.status.code).toBe(2); // ERROR
  });
});
