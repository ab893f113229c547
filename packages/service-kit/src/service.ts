import type { BlobStore } from "@cheese/blob-store";
import type { EventStore } from "@cheese/event-store";
import {
  type Closable,
  type MessageBus,
  RemoteError,
  type RpcDefinition,
  type ServedResult,
  serveRpc,
} from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import type { z } from "zod";
import { type Clock, systemClock } from "./clock.ts";
import { type BaseConfig, loadConfig } from "./config.ts";
import { unavailable as serviceUnavailable } from "./errors.ts";
import { defineEventVersions, type EventVersions, upcasting } from "./event-versions.ts";
import { type ReadinessCheck, runChecks, startHealthServer } from "./health.ts";
import {
  connectBus,
  describeAdapters,
  openBlobStore,
  openEventStore,
  openReadModels,
} from "./infrastructure.ts";
import { createLogger, type Logger } from "./logger.ts";
import { collectProcessMetrics, countingAppends, rpcOutcome, rpcServerSeries } from "./metrics.ts";
import { contextFromHeaders, contextLogger, type RequestContext } from "./request-context.ts";
import { endSpan, type SpanExporter, SpanKind, startSpan, startTracing, tracerFor } from "./tracing.ts";

/** What a request handler gets besides its payload. */
export interface HandlerContext extends RequestContext {
  logger: Logger;
}

export interface ServiceContext<C extends BaseConfig> {
  name: string;
  config: C;
  logger: Logger;
  bus: MessageBus;
  eventStore: EventStore;
  readModels: ReadModelStore;
  blobs: BlobStore;
  /** The time every decision reads (the system clock, or a test's manual one). */
  clock: Clock;
  /** Serves an RPC with queue group = service name; stopped first on shutdown. */
  serve<Req extends z.ZodType, Res extends z.ZodType>(
    definition: RpcDefinition<Req, Res>,
    handler: (payload: z.output<Req>, context: HandlerContext) => Promise<ServedResult<z.input<Res>>>,
  ): void;
  /**
   * The same for a use case written as `(deps, payload, context)`: the request goes from the bus
   * straight to it, with the deps the wiring built (the wiring itself never touches a request).
   */
  serve<Req extends z.ZodType, Res extends z.ZodType, D>(
    definition: RpcDefinition<Req, Res>,
    deps: D,
    handler: (
      deps: D,
      payload: z.output<Req>,
      context: HandlerContext,
    ) => Promise<ServedResult<z.input<Res>>>,
  ): void;
  /** Registers something to close on shutdown, after the RPC subscriptions (last in, first out). */
  onStop(closable: Closable): void;
  /** Adds a readiness check to /readyz. */
  addCheck(name: string, check: ReadinessCheck): void;
}

/**
 * A service: its configuration, the adapters it needs, and `start`, the one function that wires
 * it (projections, consumers, handlers' dependencies, RPCs) over a context. `startService` calls
 * it in production and in tests alike; what it returns (the service's `deps`) is handed back as
 * `RunningService.wired`, so a test calls the handlers with exactly what production wired.
 */
export interface ServiceDefinition<C extends BaseConfig, W = void> {
  name: string;
  configSchema: z.ZodType<C>;
  needs: { eventStore?: boolean; readModels?: boolean; blobs?: boolean };
  /**
   * The versions of the service's event types (`defineEventVersions`): the event store in its
   * context reads every event in the latest shape of its type. None: every type at version 1.
   */
  eventVersions?: EventVersions;
  start(context: ServiceContext<C>): Promise<W>;
}

export interface StartOptions {
  env?: Record<string, string | undefined>;
  /** A bus shared with other services in the same process (single-process mode). */
  bus?: MessageBus;
  logger?: Logger;
  /** Time for the service's decisions; tests pass a `ManualClock` and advance it. */
  clock?: Clock;
  /** Where the service's spans go (tests: an in-memory exporter); else as the config says. */
  spanExporter?: SpanExporter;
}

export interface RunningService<W = unknown> {
  name: string;
  healthPort: number;
  /** What the definition's `start` returned: the service's wired dependencies. */
  wired: W;
  stop(): Promise<void>;
}

/**
 * Every port names its transient failure with an error of its own (`EventStoreUnavailableError`,
 * `ReadModelsUnavailableError`, `BlobStoreUnavailableError`) that carries `dependency`, what is
 * down: that field is what makes it a 503, here, once for all of them.
 */
function isDependencyUnavailable(error: unknown): error is Error & { dependency: string } {
  return error instanceof Error && typeof (error as { dependency?: unknown }).dependency === "string";
}

const noVersions = defineEventVersions([]);

const unavailable = <T>(what: string): T =>
  new Proxy({} as object, {
    get() {
      throw new Error(`${what} was not declared in the service's needs`);
    },
  }) as T;

/** Opens the adapters the service needs, wires it, and serves its health endpoints and RPC. */
export async function startService<C extends BaseConfig, W = void>(
  definition: ServiceDefinition<C, W>,
  options: StartOptions = {},
): Promise<RunningService<W>> {
  const name = definition.name;
  const config = loadConfig(definition.configSchema as unknown as z.ZodObject, options.env) as C;
  const logger = options.logger ?? createLogger(name, config.LOG_LEVEL);
  collectProcessMetrics();
  const tracing = startTracing(name, {
    ...(config.OTEL_EXPORTER_OTLP_ENDPOINT ? { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT } : {}),
    ...(options.spanExporter ? { exporter: options.spanExporter } : {}),
  });
  const ownsBus = !options.bus;
  const bus = options.bus ?? (await connectBus(config, name, logger));
  const eventStore = definition.needs.eventStore
    ? upcasting(countingAppends(await openEventStore(config, name)), definition.eventVersions ?? noVersions)
    : unavailable<EventStore>("eventStore");
  const readModels = definition.needs.readModels
    ? await openReadModels(config, name)
    : unavailable<ReadModelStore>("readModels");
  const blobs = definition.needs.blobs ? await openBlobStore(config) : unavailable<BlobStore>("blobs");

  const servers: Closable[] = [];
  const closables: Closable[] = [];
  const checks: Record<string, ReadinessCheck> = { bus: () => bus.ping() };
  if (definition.needs.eventStore) checks.eventStore = () => eventStore.ping();
  if (definition.needs.readModels) checks.readModels = () => readModels.ping();
  if (definition.needs.blobs) checks.blobs = () => blobs.ping();

  const context: ServiceContext<C> = {
    name,
    config,
    logger,
    bus,
    eventStore,
    readModels,
    blobs,
    clock: options.clock ?? systemClock,
    serve(
      rpc: RpcDefinition<z.ZodType, z.ZodType>,
      handlerOrDeps: unknown,
      useCase?: (deps: unknown, payload: unknown, context: HandlerContext) => Promise<ServedResult<unknown>>,
    ) {
      const handler = useCase
        ? (payload: unknown, context: HandlerContext) => useCase(handlerOrDeps, payload, context)
        : (handlerOrDeps as (payload: unknown, context: HandlerContext) => Promise<ServedResult<unknown>>);
      servers.push(
        serveRpc(bus, rpc, { queue: name }, async (payload, { headers }) => {
          const request = contextFromHeaders(headers);
          const { span, context: trace } = startSpan(
            tracerFor(name),
            rpc.subject,
            SpanKind.SERVER,
            request.trace,
          );
          request.trace = trace;
          // The request's logger (a child naming its ids) is made when first used: most requests log
          // nothing, and a child of a redacting logger cost ~8 KB of garbage per request (a create
          // allocated ~110 KB in the catalogue) and ~1.3 % of the catalogue's CPU.
          let requestLogger: Logger | undefined;
          const log = () => {
            requestLogger ??= contextLogger(logger, request);
            return requestLogger;
          };
          const started = performance.now();
          let status: number | undefined;
          try {
            const reply = await handler(payload, {
              ...request,
              get logger() {
                return log();
              },
            });
            // debug: the gateway's access line already records every request at info (the profile of a
            // get showed this line, its redaction and its relay by the launcher at ~15 % of the service).
            if (logger.isLevelEnabled("debug"))
              log().debug({ subject: rpc.subject, ms: Math.round(performance.now() - started) }, "handled");
            return reply;
          } catch (error) {
            status = 500;
            if (error instanceof RemoteError) {
              status = error.body.status;
              log().info({ subject: rpc.subject, status }, "refused");
            } else if (isDependencyUnavailable(error)) {
              // The dependency, not the request: 503 with Retry-After, whichever is down.
              log().error({ err: error, subject: rpc.subject }, `${error.dependency} unavailable`);
              status = 503;
              throw serviceUnavailable(`${error.dependency} is unavailable; try again`);
            } else {
              log().error({ err: error, subject: rpc.subject }, "handler failed");
            }
            throw error;
          } finally {
            rpcServerSeries(rpc.subject, rpcOutcome(status)).observe((performance.now() - started) / 1000);
            endSpan(span, status !== undefined && status >= 500 ? `answered ${status}` : undefined);
          }
        }),
      );
    },
    onStop(closable) {
      closables.push(closable);
    },
    addCheck(checkName, check) {
      checks[checkName] = check;
    },
  };

  const wired = await definition.start(context);
  servers.push(bus.serve(`${name}.health`, { queue: name }, async () => runChecks(checks)));
  const health = await startHealthServer(config.HEALTH_PORT, checks, config.HEALTH_HOST);
  const busKind = ownsBus ? "nats" : "in-process";
  const adapters = describeAdapters(config, busKind, definition.needs);
  logger.info({ healthPort: health.port, adapters }, `${name} started`);

  let stopping: Promise<void> | undefined;
  return {
    name,
    healthPort: health.port,
    wired,
    stop() {
      stopping ??= (async () => {
        // Stop taking work, let in-flight work finish, then close connections.
        await Promise.allSettled(servers.map((s) => s.close()));
        for (const closable of closables.reverse()) await closable.close().catch(() => {});
        if (ownsBus) await bus.close().catch(() => {});
        await Promise.allSettled([
          definition.needs.eventStore ? eventStore.close() : undefined,
          definition.needs.readModels ? readModels.close() : undefined,
          definition.needs.blobs ? blobs.close() : undefined,
        ]);
        await health.close();
        await tracing.stop();
        logger.info(`${name} stopped`);
      })();
      return stopping;
    },
  };
}
