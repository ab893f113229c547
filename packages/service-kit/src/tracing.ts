import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { ExportResultCode, W3CTraceContextPropagator } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME } from "@opentelemetry/semantic-conventions";

export { type Span, SpanKind } from "@opentelemetry/api";
export type { SpanExporter } from "@opentelemetry/sdk-trace-base";

/**
 * Traces (docs/operations.md, "Traces"). A request's trace context travels the way its ids do:
 * explicitly, in the `RequestContext` a handler is given, in NATS headers and in event metadata
 * (`traceparent`, `tracestate`: W3C Trace Context, read and written by OpenTelemetry's
 * propagator). No context manager is installed: nothing hooks every promise of the process to
 * carry the current span, so tracing costs nothing where no span is made.
 *
 * Every service has its own tracer provider (its spans carry its name, also when several services
 * share a process). Without `OTEL_EXPORTER_OTLP_ENDPOINT` the provider samples nothing: spans are
 * not recorded, only their ids are made, so trace ids still reach every log line, event and
 * webhook delivery.
 */

/** The trace a request belongs to: an OpenTelemetry context holding its current span. */
export type TraceContext = Context;

/** No trace yet: a span started under it begins a new trace. */
export const noTrace: TraceContext = ROOT_CONTEXT;

const propagator = new W3CTraceContextPropagator();

/** Reads string fields of a plain object (headers, event metadata) or a fetch `Headers`. */
const getter: TextMapGetter<unknown> = {
  get(carrier, key) {
    if (carrier instanceof Headers) return carrier.get(key) ?? undefined;
    const value = (carrier as Record<string, unknown>)[key];
    return typeof value === "string" ? value : undefined;
  },
  keys(carrier) {
    return carrier instanceof Headers ? [...carrier.keys()] : Object.keys(carrier as object);
  },
};

/** The trace context named by `traceparent` (and `tracestate`) in headers or metadata, if any. */
export function extractTrace(carrier: Headers | Record<string, unknown>): TraceContext {
  return propagator.extract(ROOT_CONTEXT, carrier, getter);
}

/** Writes `traceparent` (and `tracestate`) of the context's span into `carrier`; nothing without a span. */
export function injectTrace(context: TraceContext | undefined, carrier: Record<string, string>): void {
  if (context) propagator.inject(context, carrier, { set: (c, key, value) => (c[key] = value) });
}

/** A W3C `traceparent` as the propagator reads one: version 00, trace and span ids not all zeros. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * Copies `traceparent` (and `tracestate`) from `from` to `carrier` as they are, when `from` has a
 * valid one: the trace goes on without a span of this process's own, for a process whose spans
 * are not recorded ({@link recordsSpans}). Extracting the context, starting an unrecorded span
 * and injecting it cost ~10 µs, copying 0.3 (in process).
 */
export function passTrace(from: Record<string, unknown>, carrier: Record<string, string>): void {
  const { traceparent, tracestate } = from;
  if (typeof traceparent !== "string" || !TRACEPARENT.test(traceparent)) return;
  carrier.traceparent = traceparent;
  if (typeof tracestate === "string" && tracestate !== "") carrier.tracestate = tracestate;
}

/** The trace id of the context's span, or undefined. */
export function traceIdOf(context: TraceContext | undefined): string | undefined {
  const span = context && trace.getSpanContext(context);
  return span && trace.isSpanContextValid(span) ? span.traceId : undefined;
}

/** Starts a span under `parent` and returns it with the context it is current in. */
export function startSpan(
  tracer: Tracer,
  name: string,
  kind: SpanKind,
  parent: TraceContext = noTrace,
): { span: Span; context: TraceContext } {
  const span = tracer.startSpan(name, { kind }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a span, marked failed when `error` is given. */
export function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined && span.isRecording()) {
    span.setStatus({
      code: SpanStatusCode.ERROR,
      message: error instanceof Error ? error.message : String(error),
    });
  }
  span.end();
}

/** Runs `work` in a span of `service`'s tracer under `parent`; a throw marks the span failed. */
export async function inSpan<T>(
  service: string,
  name: string,
  kind: SpanKind,
  parent: TraceContext | undefined,
  work: (context: TraceContext) => Promise<T>,
): Promise<T> {
  const { span, context } = startSpan(tracerFor(service), name, kind, parent);
  try {
    const result = await work(context);
    span.end();
    return result;
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
}

export interface TracingOptions {
  /** OTLP/HTTP base address (`OTEL_EXPORTER_OTLP_ENDPOINT`); spans go to `<endpoint>/v1/traces`. */
  endpoint?: string;
  /** Where spans go instead (tests: an in-memory exporter), each as soon as it ends. */
  exporter?: SpanExporter;
}

interface ServiceTracing {
  provider: BasicTracerProvider;
  tracer: Tracer;
  users: number;
}

/** How long a stopping service waits for its last spans to be exported. */
const SHUTDOWN_BUDGET_MS = 2_000;

/** Ids only: samples nothing, records nothing, exports nothing. */
const idsOnly = new BasicTracerProvider({ sampler: new AlwaysOffSampler() });
const byService = new Map<string, ServiceTracing>();

/**
 * The OTLP/HTTP exporter, its module loaded on first use: it pulls in ~130 modules (the OTLP
 * transformer, the metrics and logs SDKs) that a service without a collector never needs.
 */
function otlpExporter(url: string): SpanExporter {
  const loading = import("@opentelemetry/exporter-trace-otlp-http").then(
    ({ OTLPTraceExporter }) => new OTLPTraceExporter({ url }),
  );
  return {
    export(spans, done) {
      loading.then(
        (exporter) => exporter.export(spans, done),
        (error: Error) => done({ code: ExportResultCode.FAILED, error }),
      );
    },
    shutdown: () => loading.then((exporter) => exporter.shutdown()),
    forceFlush: () => loading.then((exporter) => exporter.forceFlush()),
  };
}

/**
 * Sets up the service's tracing: recorded and exported when an endpoint or an exporter is given
 * (sampling as `OTEL_TRACES_SAMPLER` says; by default every trace, and a caller's decision is
 * kept), ids only otherwise. Instances of one service in a process share the first one's set-up;
 * the last to stop sends what is left (for at most 2 s) and shuts it down.
 */
export function startTracing(service: string, options: TracingOptions = {}): { stop(): Promise<void> } {
  const exporter =
    options.exporter ??
    (options.endpoint ? otlpExporter(`${options.endpoint.replace(/\/+$/, "")}/v1/traces`) : undefined);
  let current = byService.get(service);
  if (!current && exporter) {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: service }),
      spanProcessors: [
        options.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter),
      ],
    });
    current = { provider, tracer: provider.getTracer(service), users: 0 };
    byService.set(service, current);
  }
  if (!current) return { stop: async () => {} };
  const mine = current;
  mine.users += 1;
  let stopped = false;
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      mine.users -= 1;
      if (mine.users > 0) return;
      if (byService.get(service) === mine) byService.delete(service);
      // The last spans are sent, unless the collector keeps us waiting past the stop's budget.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        mine.provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, SHUTDOWN_BUDGET_MS).unref();
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

/** Whether `service`'s spans are recorded and exported (its tracing started with an exporter or endpoint). */
export function recordsSpans(service: string): boolean {
  return byService.has(service);
}

/** The tracer of `service`: recording when its tracing is on, ids only otherwise. */
export function tracerFor(service: string): Tracer {
  return byService.get(service)?.tracer ?? idsOnly.getTracer(service);
}
