import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import {
  callRpc,
  createInProcessBroker,
  type InProcessBroker,
  type MessageBus,
  type RpcDefinition,
} from "@cheese/messaging";
import { expect } from "vitest";
import type { z } from "zod";
import type { Clock, Timer } from "./clock.ts";
import type { BaseConfig } from "./config.ts";
import type { Decider, DomainEvent } from "./decider.ts";
import { defineEventVersions, upcasting } from "./event-versions.ts";
import { createLogger } from "./logger.ts";
import { type RunningService, type ServiceDefinition, startService } from "./service.ts";

/** Keeps the spans a service records (pass it as `spanExporter`, or to `startTracing`). */
export { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";

/**
 * Given events / when command / then events (or then an error), for testing deciders
 * without any I/O.
 */
export function specFor<State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) {
  return (given: Event[]) => ({
    when: (command: Command) => {
      const state = given.reduce(decider.evolve, decider.initialState());
      const run = () => decider.decide(command, state);
      return {
        thenEmits: (expected: Event[]) => expect(run()).toEqual(expected),
        thenRefuses: (match: Record<string, unknown>) => {
          let thrown: unknown;
          try {
            run();
          } catch (error) {
            thrown = error;
          }
          expect(thrown, "decide should have refused the command").toBeDefined();
          expect(thrown).toMatchObject(match);
        },
      };
    },
  });
}

interface PendingTimer {
  due: number;
  callback: () => void;
  everyMs?: number;
}

/**
 * A clock that moves only when the test says so. Timers fire inside `advance`, in the order
 * they fall due, each at its own time; what they start runs on afterwards (poll for its effect
 * with `expect.poll`).
 */
export class ManualClock implements Clock {
  private time: number;
  private readonly timers = new Set<PendingTimer>();

  constructor(start: Date | string = new Date()) {
    this.time = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.time);
  }

  setTimeout(callback: () => void, ms: number): Timer {
    return this.add({ due: this.time + Math.max(0, ms), callback });
  }

  setInterval(callback: () => void, ms: number): Timer {
    const everyMs = Math.max(1, ms);
    return this.add({ due: this.time + everyMs, callback, everyMs });
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      const next = [...this.timers].filter((t) => t.due <= until).sort((a, b) => a.due - b.due)[0];
      if (!next) break;
      this.time = Math.max(this.time, next.due);
      if (next.everyMs) next.due += next.everyMs;
      else this.timers.delete(next);
      next.callback();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.time = until;
    await new Promise((resolve) => setImmediate(resolve));
  }

  private add(timer: PendingTimer): Timer {
    this.timers.add(timer);
    return { cancel: () => this.timers.delete(timer) };
  }
}

export interface ServiceSpecOptions {
  /** Configuration beyond a fresh DATA_DIR (which the spec makes and removes). */
  env?: Record<string, string>;
  /** Where the clock starts; `ServiceSpec.clock` is a ManualClock. */
  start?: Date | string;
  /** A broker shared with stand-ins of other services (say, a fake catalogue). */
  broker?: InProcessBroker;
}

/**
 * A service's handlers tested as Emmett's API specifications test an API: given events in its
 * event store, when an RPC, then the reply and the events the RPC appended (or the refusal). The
 * service runs as it does in production (`startService`, its real SQLite event store and read
 * models), on an in-process bus and a manual clock.
 *
 * ```ts
 * const spec = await serviceSpec(catalogueService);
 * await spec
 *   .given({ "cheese-7": [added] })
 *   .when(catalogueRpc.updateCheese, { cheeseId: 7, changes: { status: "sold" } })
 *   .thenReturns({ reply: { revision: 2 }, events: { "cheese-7": [updated, statusChanged] } });
 * ```
 */
export async function serviceSpec<C extends BaseConfig>(
  definition: ServiceDefinition<C, unknown>,
  options: ServiceSpecOptions = {},
): Promise<ServiceSpec> {
  const dir = mkdtempSync(join(tmpdir(), `${definition.name}-spec-`));
  const broker = options.broker ?? createInProcessBroker();
  const clock = new ManualClock(options.start);
  const service = await startService(definition, {
    env: { DATA_DIR: dir, LOG_LEVEL: "silent", ...options.env },
    bus: broker.connect(definition.name),
    logger: createLogger(definition.name, "silent"),
    clock,
  });
  // Read and written as the service does: given events are in today's shapes, and stamped so.
  const store = upcasting(
    createSqliteEventStore({ file: join(dir, definition.name, "events.sqlite") }),
    definition.eventVersions ?? defineEventVersions([]),
  );
  return new ServiceSpec(service, store, broker.connect("spec"), clock, () =>
    rmSync(dir, { recursive: true, force: true }),
  );
}

type Given = Record<string, DomainEvent[]>;

export class ServiceSpec {
  constructor(
    readonly service: RunningService,
    /** The service's event store, as the spec sees it. */
    readonly store: EventStore,
    /** A client on the service's bus. */
    readonly bus: MessageBus,
    readonly clock: ManualClock,
    private readonly cleanUp: () => void,
  ) {}

  /** Appends these events to these streams, as if earlier commands had. */
  given(streams: Given = {}) {
    const ready = (async () => {
      for (const [stream, events] of Object.entries(streams)) {
        await this.store.append(
          stream,
          events.map((event) => ({ type: event.type, data: event.data })),
          { expectedRevision: "any" },
        );
      }
    })();
    return {
      when: <Req extends z.ZodType, Res extends z.ZodType>(
        rpc: RpcDefinition<Req, Res>,
        payload: z.input<Req>,
      ) => this.when(ready, Object.keys(streams), rpc, payload),
    };
  }

  private when<Req extends z.ZodType, Res extends z.ZodType>(
    ready: Promise<void>,
    givenStreams: string[],
    rpc: RpcDefinition<Req, Res>,
    payload: z.input<Req>,
  ) {
    const outcome = (async () => {
      await ready;
      const from = await this.store.headPosition();
      const reply = await callRpc(this.bus, rpc, payload, { timeoutMs: 10_000 }).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      const appended: Record<string, DomainEvent[]> = {};
      for await (const event of this.store.readAll(from === -1 ? {} : { after: from })) {
        const events = appended[event.streamName] ?? [];
        events.push({ type: event.type, data: event.data });
        appended[event.streamName] = events;
      }
      return { reply, appended };
    })();
    return {
      /**
       * The reply matches `reply` (a partial match, as `toMatchObject`), and each stream named in
       * `events` got exactly these new events. Resolves to the reply.
       */
      thenReturns: async (expected: { reply?: unknown; events?: Given }): Promise<z.output<Res>> => {
        const { reply, appended } = await outcome;
        if (!reply.ok) throw reply.error;
        if (expected.reply !== undefined) expect(reply.value).toMatchObject(expected.reply as object);
        for (const [stream, events] of Object.entries(expected.events ?? {})) {
          expect(appended[stream] ?? [], `new events in ${stream}`).toEqual(events);
        }
        return reply.value;
      },
      /**
       * The RPC is refused with a body matching `body`, and nothing is appended to the streams
       * of the given, nor to `unchanged`.
       */
      thenRefuses: async (body: Record<string, unknown>, unchanged: string[] = []): Promise<void> => {
        const { reply, appended } = await outcome;
        expect(reply.ok, "the RPC should have been refused").toBe(false);
        expect((reply as { error: { body?: unknown } }).error.body).toMatchObject(body);
        for (const stream of [...givenStreams, ...unchanged]) {
          expect(appended[stream] ?? [], `a refusal appends nothing to ${stream}`).toEqual([]);
        }
      },
    };
  }

  /** A plain call (a query, say), outside given/when/then. */
  call<Req extends z.ZodType, Res extends z.ZodType>(
    rpc: RpcDefinition<Req, Res>,
    payload: z.input<Req>,
  ): Promise<z.output<Res>> {
    return callRpc(this.bus, rpc, payload, { timeoutMs: 10_000 });
  }

  async stop(): Promise<void> {
    await this.service.stop();
    await this.store.close();
    await this.bus.close();
    this.cleanUp();
  }
}
