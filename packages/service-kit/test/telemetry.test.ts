import { type AddressInfo, createServer, type Socket } from "node:net";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import {
  callRpc,
  createInProcessBus,
  type DeliveredEvent,
  defineRpc,
  type MessageBus,
  silentLogger,
} from "@cheese/messaging";
import { createMemoryReadModels } from "@cheese/read-models";
import { metricValue, scrape, tempDir } from "@cheese/testing";
import { SpanKind } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { baseConfigSchema } from "../src/config.ts";
import { conflict } from "../src/errors.ts";
import { startHealthServer } from "../src/health.ts";
import { busOptions } from "../src/infrastructure.ts";
import { createLogger } from "../src/logger.ts";
import { metricsRegistry } from "../src/metrics.ts";
import { startProjection } from "../src/projection.ts";
import { startPublisher } from "../src/publisher.ts";
import { contextMetadata, type RequestContext } from "../src/request-context.ts";
import { type RunningService, startService } from "../src/service.ts";
import { startTracing, tracerFor } from "../src/tracing.ts";

const makeWidget = defineRpc({
  subject: "widgets.widget.make",
  request: z.object({ id: z.number(), refuse: z.boolean().default(false) }),
  response: z.object({ id: z.number() }),
});

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const traceparent = `00-${TRACE_ID}-${CALLER_SPAN}-01`;
/** A W3C traceparent of the given trace, with any span id but the caller's. */
const childOf = (traceId: string) => new RegExp(`^00-${traceId}-(?!${CALLER_SPAN})[0-9a-f]{16}-0[01]$`);

describe("a service's metrics and traces", () => {
  let dir: ReturnType<typeof tempDir>;
  let bus: MessageBus;
  let service: RunningService | undefined;
  const contexts: RequestContext[] = [];

  beforeEach(() => {
    dir = tempDir("telemetry");
    bus = createInProcessBus();
    contexts.length = 0;
  });
  afterEach(async () => {
    await service?.stop();
    service = undefined;
    await bus.close();
    dir.remove();
  });

  const startWidgets = async (spanExporter?: InMemorySpanExporter) => {
    service = await startService(
      {
        name: "widgets",
        configSchema: baseConfigSchema,
        needs: { eventStore: true },
        async start(ctx) {
          ctx.serve(makeWidget, async ({ id, refuse }, context) => {
            contexts.push(context);
            if (refuse) throw conflict("no such widget today");
            await ctx.eventStore.append(
              `widget-${id}`,
              [{ type: "WidgetMade", data: { id }, metadata: contextMetadata(context) }],
              { expectedRevision: "no_stream" },
            );
            return { id };
          });
        },
      },
      {
        bus,
        env: { DATA_DIR: dir.path },
        logger: createLogger("widgets", "silent"),
        ...(spanExporter ? { spanExporter } : {}),
      },
    );
    return `http://127.0.0.1:${service.healthPort}`;
  };
  const make = (id: number, refuse = false, headers: Record<string, string> = {}) =>
    callRpc(bus, makeWidget, { id, refuse }, { timeoutMs: 2_000, headers }).catch(() => undefined);

  it("/metrics on the health port counts RPCs by subject and outcome and appended events by category, beside the process metrics", async () => {
    const health = await startWidgets();
    const before = await scrape(health);
    const rpcs = (text: string, outcome: string) =>
      metricValue(text, "cheese_rpc_server_duration_seconds_count", { subject: makeWidget.subject, outcome });

    for (const id of [1, 2, 3]) await make(id);
    for (const id of [4, 5]) await make(id, true);

    const after = await scrape(health);
    expect(rpcs(after, "ok") - rpcs(before, "ok")).toBe(3);
    expect(rpcs(after, "refused") - rpcs(before, "refused")).toBe(2);
    expect(rpcs(after, "failed") - rpcs(before, "failed")).toBe(0);
    const appended = (text: string) =>
      metricValue(text, "cheese_events_appended_total", { category: "widget" });
    expect(appended(after) - appended(before)).toBe(3);
    expect(after).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(after).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(after).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });

  it("carries the caller's trace into the handler, its span and the metadata of the events it appends", async () => {
    const spans = new InMemorySpanExporter();
    await startWidgets(spans);
    await make(7, false, { traceparent });

    const metadata = contextMetadata(contexts[0]!);
    expect(metadata.traceparent).toMatch(childOf(TRACE_ID));
    const store = createSqliteEventStore({ file: `${dir.path}/widgets/events.sqlite` });
    try {
      const [event] = await store.readStream("widget-7");
      expect(event?.metadata.traceparent).toBe(metadata.traceparent);
    } finally {
      await store.close();
    }

    const [span] = spans.getFinishedSpans();
    expect(span).toMatchObject({ name: makeWidget.subject, kind: SpanKind.SERVER });
    expect(span!.spanContext().traceId).toBe(TRACE_ID);
    expect(span!.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(metadata.traceparent).toBe(`00-${TRACE_ID}-${span!.spanContext().spanId}-01`);
    expect(span!.resource.attributes["service.name"]).toBe("widgets");
  });

  it("starts a trace for a request that brings none, and records nothing without an exporter", async () => {
    await startWidgets();
    await make(8);
    await make(9);
    // Not sampled (flags 00): nothing is recorded, but the ids exist and are carried on.
    const traceIds = contexts.map(
      (context) =>
        /^00-([0-9a-f]{32})-[0-9a-f]{16}-00$/.exec(String(contextMetadata(context).traceparent))?.[1],
    );
    expect(traceIds).toEqual([expect.any(String), expect.any(String)]);
    expect(traceIds[0]).not.toBe(traceIds[1]);
  });
});

describe("the outbox relay", () => {
  /** Relays a traced event and an untraced one; what the consumer received. */
  const relayed = async () => {
    const dir = tempDir("relay-trace");
    const bus = createInProcessBus();
    const store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    const received: DeliveredEvent[] = [];
    const consumer = bus.consume({
      durable: "test-relay-trace",
      subjects: ["events.widgets.>"],
      handler: async (event) => void received.push(event),
    });
    const publisher = await startPublisher({
      service: "widgets",
      eventStore: store,
      bus,
      categories: ["widget"],
      toIntegrationEvent: (event) => ({ subject: "events.widgets.widget.made", payload: event.data }),
      logger: createLogger("widgets", "silent"),
    });
    try {
      await store.append(
        "widget-1",
        [{ type: "WidgetMade", data: { id: 1 }, metadata: { requestId: "r-1", traceparent } }],
        { expectedRevision: "no_stream" },
      );
      await store.append("widget-2", [{ type: "WidgetMade", data: { id: 2 }, metadata: {} }], {
        expectedRevision: "no_stream",
      });
      await expect.poll(() => received.length).toBe(2);
      expect(received[0]!.headers["x-request-id"]).toBe("r-1");
      // An event appended outside any request goes on without a trace.
      expect(received[1]!.headers.traceparent).toBeUndefined();
      return received;
    } finally {
      await publisher.close();
      await consumer.close();
      await bus.close();
      await store.close();
      dir.remove();
    }
  };

  it("publishes an event under a producer span in the trace of the command that appended it", async () => {
    const spans = new InMemorySpanExporter();
    const tracing = startTracing("widgets", { exporter: spans });
    try {
      const [traced] = await relayed();
      expect(traced!.headers.traceparent).toMatch(childOf(TRACE_ID));
      const producer = spans.getFinishedSpans().find((span) => span.kind === SpanKind.PRODUCER);
      expect(producer?.name).toBe("publish events.widgets.widget.made");
      expect(producer?.parentSpanContext?.spanId).toBe(CALLER_SPAN);
      expect(traced!.headers.traceparent).toContain(producer!.spanContext().spanId);
    } finally {
      await tracing.stop();
    }
  });

  it("passes the command's trace on as it is when the service's spans are not recorded", async () => {
    const [traced] = await relayed();
    expect(traced!.headers.traceparent).toBe(traceparent);
  });
});

describe("projection metrics", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("projection-metrics");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("counts the events a projection applied, and shows its lag while it is behind", async () => {
    const health = await startHealthServer(0, {});
    const url = `http://127.0.0.1:${health.port}`;
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const projection = await startProjection({
      name: "gadgets",
      version: 1,
      collections: [],
      eventStore: store,
      readModels: createMemoryReadModels(),
      categories: ["gadget"],
      logger: createLogger("test", "silent"),
      apply: async (event) => {
        if (event.streamName === "gadget-3") await gate;
      },
    });
    const projected = async () =>
      metricValue(await scrape(url), "cheese_events_projected_total", { projection: "gadgets" });
    const lag = async () =>
      metricValue(await scrape(url), "cheese_projection_lag_seconds", { projection: "gadgets" });
    try {
      const before = await projected();
      for (const id of [1, 2, 3, 4])
        await store.append(`gadget-${id}`, [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });
      await store.append("other-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });

      // Stuck on gadget-3: two applied, and the lag is the age of gadget-3, growing.
      await expect.poll(projected).toBe(before + 2);
      await expect.poll(lag).toBeGreaterThanOrEqual(0.05);

      openGate();
      await expect.poll(projected).toBe(before + 4);
      await expect.poll(lag).toBe(0);
    } finally {
      openGate();
      await projection.close();
      await health.close();
    }
  });
});

describe("stopping with tracing on", () => {
  it("does not wait on a collector that never answers for longer than its budget", async () => {
    // A collector that takes the connection and never answers.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    const tracing = startTracing("stuck", { endpoint: `http://127.0.0.1:${port}` });
    try {
      tracerFor("stuck").startSpan("something").end();
      const stopped = tracing.stop().then(() => "stopped");
      const late = new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5_000).unref());
      expect(await Promise.race([stopped, late])).toBe("stopped");
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe("dead letters", () => {
  it("counts each dead-lettered event once, by consumer, on a bus made with busOptions", async () => {
    const config = baseConfigSchema.parse({ DEAD_LETTER_AFTER: "1s" });
    const bus = createInProcessBus({ ...busOptions(config), logger: silentLogger });
    const durable = `test-dead-letter-metric-${Date.now()}`;
    const consumer = bus.consume({
      durable,
      subjects: ["events.widgets.>"],
      maxRedeliveryDelayMs: 100,
      handler: async () => {
        throw new Error("always fails");
      },
    });
    try {
      const count = async () =>
        metricValue(await metricsRegistry.metrics(), "cheese_event_dead_letters_total", {
          consumer: durable,
        });
      expect(await count()).toBe(0);
      await bus.publish({ id: "w1", subject: "events.widgets.widget.made", payload: {} });
      await expect.poll(count, { timeout: 5_000 }).toBe(1);
      expect((await bus.deadLetters().list({ durable, limit: 10 })).items).toHaveLength(1);
    } finally {
      await consumer.close();
      await bus.close();
    }
  });
});
