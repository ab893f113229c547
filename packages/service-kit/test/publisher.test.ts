import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import {
  BusUnavailableError,
  type Closable,
  connectNatsBus,
  createInProcessBus,
  type IntegrationEvent,
  type MessageBus,
  silentLogger,
} from "@cheese/messaging";
import { startNatsServer, tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Clock } from "../src/clock.ts";
import { createLogger } from "../src/logger.ts";
import { checkpointRecords, PUBLISH_WINDOW, raiseCheckpoint, startPublisher } from "../src/publisher.ts";
import { ManualClock } from "../src/testing.ts";

/**
 * A bus whose publishes the test holds and settles by hand (the JetStream ack), or fails: what
 * the relay sends, in which order, and how many are awaiting their ack at once.
 */
function heldBus(inner: MessageBus) {
  const held: { event: IntegrationEvent; settle: (error?: Error) => void }[] = [];
  const sent: string[] = [];
  let most = 0;
  let pending = 0;
  const bus: MessageBus = {
    ...inner,
    kv: (bucket, options) => inner.kv(bucket, options),
    serve: (subject, options, handler) => inner.serve(subject, options, handler),
    request: (subject, payload, options) => inner.request(subject, payload, options),
    publish: (event) => {
      sent.push(event.id);
      pending++;
      most = Math.max(most, pending);
      return new Promise<void>((resolve, reject) => {
        held.push({
          event,
          settle: (error) => {
            pending--;
            if (error) return reject(error);
            inner.publish(event).then(resolve, reject);
          },
        });
      });
    },
  };
  return { bus, held, sent, most: () => most };
}

describe("the outbox relay's window", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let inner: MessageBus;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(() => {
    dir = tempDir("relay-window");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    inner = createInProcessBus();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await inner.close();
    await store.close();
    dir.remove();
  });

  const relay = async (bus: MessageBus) => {
    const publisher = await startPublisher({
      service: "widgets",
      eventStore: store,
      bus,
      categories: ["widget"],
      toIntegrationEvent: (event) => ({ subject: "events.widgets.widget.made", payload: event.data }),
      logger: createLogger("widgets", "silent"),
    });
    closers.push(() => publisher.close());
    return publisher;
  };
  const received = () => {
    const ids: string[] = [];
    const consumer = inner.consume({
      durable: `relay-${Math.random()}`,
      subjects: ["events.widgets.>"],
      handler: async (event) => void ids.push(event.id),
    });
    closers.push(() => consumer.close());
    return ids;
  };
  const appendWidgets = async (count: number) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n++) {
      await store.append(`widget-${n}`, [{ type: "WidgetMade", data: { n } }], {
        expectedRevision: "no_stream",
      });
      const [event] = await store.readStream(`widget-${n}`);
      ids.push(event!.id);
    }
    return ids;
  };

  it("keeps up to a window of publishes awaiting their ack, sent and stored in event-store order", async () => {
    const count = PUBLISH_WINDOW + 36;
    const ids = await appendWidgets(count);
    const got = received();
    const { bus, held, sent, most } = heldBus(inner);
    await relay(bus);

    // The relay does not wait for one ack before the next publish, but stops at the window.
    await expect.poll(() => held.length).toBe(PUBLISH_WINDOW);
    expect(sent).toEqual(ids.slice(0, PUBLISH_WINDOW));
    // Each ack frees a place; the rest follow, still in order.
    for (let settled = 0; settled < count; settled++) {
      await expect.poll(() => held.length).toBeGreaterThan(settled);
      held[settled]!.settle();
    }
    await expect.poll(() => got.length).toBe(count);
    expect(sent).toEqual(ids);
    expect(got).toEqual(ids);
    expect(most()).toBe(PUBLISH_WINDOW);
  });

  it("starts while its checkpoint cannot be read yet (the bus unavailable), and publishes once it can", async () => {
    // A bucket just made on a busy cluster: its first reads time out. The relay's start must not
    // fail on that (the service's process would exit): it asks again.
    let refusals = 2;
    const bus: MessageBus = {
      ...inner,
      publish: (event) => inner.publish(event),
      serve: (subject, options, handler) => inner.serve(subject, options, handler),
      request: (subject, payload, options) => inner.request(subject, payload, options),
      kv: async (bucket, options) => {
        const kv = await inner.kv(bucket, options);
        const get = kv.get.bind(kv);
        return Object.assign(Object.create(kv), {
          get: (key: string) =>
            refusals-- > 0 ? Promise.reject(new BusUnavailableError(`kv get ${key}`)) : get(key),
        });
      },
    };
    const ids = await appendWidgets(3);
    const got = received();
    await relay(bus);
    expect(refusals).toBeLessThan(0);
    await expect.poll(() => got).toEqual(ids);
  });

  it("after a failed publish starts again from the last event acked with all before it: nothing lost", async () => {
    const ids = await appendWidgets(10);
    const got = received();
    const first = heldBus(inner);
    const publisher = await relay(first.bus);
    await expect.poll(() => first.held.length).toBe(10);
    // Acks for 0-2 and 5-9; 3 fails, 4 is still under way when the relay stops.
    for (const n of [0, 1, 2, 5, 6, 7, 8, 9]) first.held[n]!.settle();
    first.held[3]!.settle(new Error("nats-server went away"));
    await expect.poll(() => got.length).toBe(8);
    first.held[4]!.settle();
    // The relay restarts a second later from after event 2 and sends 3 onwards again (the bus
    // stores an id once).
    await expect.poll(() => first.sent.length, { timeout: 5_000 }).toBeGreaterThan(10);
    expect(first.sent.slice(10, 17)).toEqual(ids.slice(3));
    for (const again of first.held.slice(10)) again.settle();
    await expect.poll(() => new Set(got).size).toBe(10);
    expect([...got].sort()).toEqual([...ids].sort());
    expect(got).toHaveLength(10);
    // Its checkpoint, saved at close, covers all ten: a new relay sends nothing again.
    await publisher.close();
    const second = heldBus(inner);
    await relay(second.bus);
    await store.append("widget-last", [{ type: "WidgetMade", data: {} }], { expectedRevision: "no_stream" });
    await expect.poll(() => second.held.length).toBe(1);
    expect(second.sent).toHaveLength(1);
    second.held[0]!.settle();
  });
});

/** The tests' relay lease (the grace before a standby takes over). */
const LEASE_MS = 3_000;

const adapters = [
  { adapter: "in-process", open: async () => ({ bus: createInProcessBus(), stop: async () => {} }) },
  {
    adapter: "NATS",
    open: async () => {
      const server = await startNatsServer();
      const bus = await connectNatsBus({ url: server.url, name: "widgets", logger: silentLogger });
      return { bus, stop: () => server.stop() };
    },
  },
];

describe.each(adapters)(
  "two replicas of the relay sharing one checkpoint ($adapter key-value store)",
  ({ open }) => {
    it("the replica behind never moves the checkpoint back, so a restart publishes nothing again", async () => {
      const dir = tempDir("relay-replicas");
      const store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
      const { bus: inner, stop } = await open();
      const start = (bus: MessageBus, clock: Clock = new ManualClock()) =>
        startPublisher({
          service: "widgets",
          eventStore: store,
          bus,
          categories: ["widget"],
          toIntegrationEvent: (event) => ({ subject: "events.widgets.widget.made", payload: event.data }),
          logger: createLogger("widgets", "silent"),
          leaseMs: LEASE_MS,
          clock,
        });
      try {
        const positions: number[] = [];
        for (let n = 0; n < 10; n++) {
          const appended = await store.append(`widget-${n}`, [{ type: "WidgetMade", data: { n } }], {
            expectedRevision: "no_stream",
          });
          positions.push(appended.position);
        }
        // The replica behind: its publishes are acked only up to the third event, and it stops
        // renewing its lease (its clock stands still: cut off).
        const behind = heldBus(inner);
        const lagging = await start(behind.bus);
        await expect.poll(() => behind.held.length).toBe(10);
        for (const n of [0, 1, 2]) behind.held[n]!.settle();
        // The replica ahead takes over after the grace, relays all ten and saves its checkpoint as
        // it stops; for a moment both relay.
        const front = heldBus(inner);
        const clock = new ManualClock();
        const ahead = await start(front.bus, clock);
        expect(front.held).toHaveLength(0);
        await clock.advance(LEASE_MS + LEASE_MS / 2);
        await expect.poll(() => front.held.length).toBe(10);
        for (const held of front.held) held.settle();
        await ahead.close();
        const kv = await inner.kv("publisher_checkpoints");
        const stored = async () => Number(new TextDecoder().decode((await kv.get("widgets"))!.value));
        expect(await stored()).toBe(positions[9]);
        // The replica behind stops last, its checkpoint at the third event.
        const stopping = lagging.close();
        for (const held of behind.held.slice(3)) held.settle(new Error("no ack"));
        await stopping;
        expect(await stored()).toBe(positions[9]);
        // A replica started now publishes only what is new.
        const next = heldBus(inner);
        const restarted = await start(next.bus);
        await store.append("widget-last", [{ type: "WidgetMade", data: {} }], {
          expectedRevision: "no_stream",
        });
        await expect.poll(() => next.held.length).toBe(1);
        next.held[0]!.settle();
        expect(next.sent).toHaveLength(1);
        await restarted.close();
      } finally {
        await inner.close();
        await stop();
        await store.close();
        dir.remove();
      }
    });

    it("raiseCheckpoint: two writers racing leave the highest position, whatever the order", async () => {
      const { bus, stop } = await open();
      try {
        const writer = async (positions: number[]) => {
          const records = checkpointRecords(bus); // a replica of its own
          for (const position of positions) await raiseCheckpoint(records, "raced", position);
        };
        await Promise.all([writer([100, 300, 500, 700]), writer([0, 200, 400, 600, 50])]);
        expect((await checkpointRecords(bus).get("raced"))?.value).toBe(700);
      } finally {
        await bus.close();
        await stop();
      }
    });
  },
);

/** A bus that counts a relay's publishes, and can be cut off as its process dies (no release). */
function countingBus(inner: MessageBus) {
  const sent: string[] = [];
  let dead = false;
  const refuse = () => Promise.reject(new BusUnavailableError("the process is gone"));
  const served: Closable[] = [];
  const bus: MessageBus = {
    ...inner,
    serve: (subject, options, handler) => {
      const closable = inner.serve(subject, options, handler);
      served.push(closable);
      return closable;
    },
    request: (subject, payload, options) => (dead ? refuse() : inner.request(subject, payload, options)),
    publish: (event) => {
      if (dead) return refuse();
      sent.push(event.id);
      return inner.publish(event);
    },
    kv: async (bucket, options) => {
      const kv = await inner.kv(bucket, options);
      return new Proxy(kv, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if (typeof value !== "function") return value;
          return (...args: unknown[]) => (dead ? refuse() : value.apply(target, args));
        },
      });
    },
  };
  /** Its writes fail from now on, and it still answers what it serves: cut off from the bucket, or stuck. */
  const stall = () => {
    dead = true;
  };
  /** Its process is gone: its writes fail and nothing it served answers any more. */
  const kill = async () => {
    dead = true;
    for (const closable of served.splice(0)) await closable.close();
  };
  return { bus, sent, kill, stall };
}

describe.each(adapters)("one relay of a service active at a time ($adapter bus)", ({ open }) => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let inner: MessageBus;
  let stop: () => Promise<void>;
  let clock: ManualClock;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = tempDir("relay-lease");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    ({ bus: inner, stop } = await open());
    clock = new ManualClock();
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await inner.close();
    await stop();
    await store.close();
    dir.remove();
  });

  /** A replica's relay over the shared store and bus, its publishes counted. */
  const replica = async () => {
    const counted = countingBus(inner);
    const publisher = await startPublisher({
      service: "widgets",
      eventStore: store,
      bus: counted.bus,
      categories: ["widget"],
      toIntegrationEvent: (event) => ({ subject: "events.widgets.widget.made", payload: event.data }),
      logger: createLogger("widgets", "silent"),
      leaseMs: LEASE_MS,
      clock,
    });
    let closed = false;
    const close = async () => {
      if (!closed) await publisher.close();
      closed = true;
    };
    closers.push(close);
    return { ...counted, close };
  };
  const received = () => {
    const ids: string[] = [];
    const consumer = inner.consume({
      durable: `lease-${Math.random().toString(36).slice(2)}`,
      subjects: ["events.widgets.>"],
      handler: async (event) => void ids.push(event.id),
    });
    closers.push(() => consumer.close());
    return ids;
  };
  let appended = 0;
  const appendWidgets = async (count: number) => {
    const ids: string[] = [];
    for (let n = 0; n < count; n++, appended++) {
      await store.append(`widget-${appended}`, [{ type: "WidgetMade", data: { n: appended } }], {
        expectedRevision: "no_stream",
      });
      const [event] = await store.readStream(`widget-${appended}`);
      ids.push(event!.id);
    }
    return ids;
  };
  const leaseRevision = async () =>
    (await (await inner.kv("publisher_checkpoints")).get("widgets.lease"))?.revision;
  /**
   * Moves the clock on by `ms`, a third of the lease (a renewal) at a time; `renewed`: waiting
   * after each for the holder's renewal to be written.
   */
  const pass = async (ms: number, { renewed }: { renewed: boolean }) => {
    for (let gone = 0; gone < ms; gone += LEASE_MS / 3) {
      const before = await leaseRevision();
      await clock.advance(LEASE_MS / 3);
      if (renewed) await expect.poll(leaseRevision).not.toBe(before);
    }
  };

  it("given two replicas, when events are stored, then each is published once, by one of them", async () => {
    const got = received();
    const first = await replica();
    const second = await replica();
    const ids = await appendWidgets(5);
    await expect.poll(() => new Set(got).size).toBe(5);
    // Renewals go on for several graces: the standby never steals a lease that is kept.
    await pass(3 * LEASE_MS, { renewed: true });
    const more = await appendWidgets(5);
    await expect.poll(() => new Set(got).size).toBe(10);
    expect([...first.sent, ...second.sent].sort()).toEqual([...ids, ...more].sort());
    expect(first.sent.length === 0 || second.sent.length === 0).toBe(true);
  });

  it("given two replicas, when the active one stops, then the other publishes the next events at once", async () => {
    const got = received();
    const first = await replica();
    const second = await replica();
    const ids = await appendWidgets(3);
    await expect.poll(() => new Set(got).size).toBe(3);
    const [active, standby] = first.sent.length > 0 ? [first, second] : [second, first];
    await active.close();
    // No time passes: the released lease is taken as it is released.
    const next = await appendWidgets(3);
    await expect.poll(() => standby.sent).toEqual(next);
    await expect.poll(() => [...got].sort()).toEqual([...ids, ...next].sort());
  });

  /** Two replicas, three events published: the active one and the standby. */
  const twoRelaying = async () => {
    const got = received();
    const first = await replica();
    const second = await replica();
    await appendWidgets(3);
    await expect.poll(() => new Set(got).size).toBe(3);
    const [active, standby] = first.sent.length > 0 ? [first, second] : [second, first];
    return { got, active, standby };
  };
  /**
   * The standby published `next`, starting from the last checkpoint saved: what followed it is
   * published again, stored once.
   */
  const tookOver = async (standby: { sent: string[] }, got: string[], next: string[]) => {
    await expect.poll(() => standby.sent).toEqual(expect.arrayContaining(next));
    await expect.poll(() => new Set(got).size).toBe(6);
    expect(got.filter((id) => next.includes(id)).sort()).toEqual([...next].sort());
  };

  it("given two replicas, when the active one's process dies without releasing, then the other publishes at its next step", async () => {
    const { got, active, standby } = await twoRelaying();
    await active.kill();
    const next = await appendWidgets(3);
    // One step, not the grace: nobody answers for the holder.
    await clock.advance(LEASE_MS / 3);
    await tookOver(standby, got, next);
  });

  it("given one replica that died holding the lease, when the next one starts (a restart), then it publishes at once", async () => {
    const got = received();
    const before = await replica();
    const ids = await appendWidgets(2);
    await expect.poll(() => got).toEqual(ids);
    await before.kill();
    // No time passes: the restarted replica finds nobody answering for the holder it reads.
    const after = await replica();
    const next = await appendWidgets(2);
    await expect.poll(() => after.sent).toEqual(expect.arrayContaining(next));
    await expect.poll(() => [...new Set(got)].sort()).toEqual([...ids, ...next].sort());
  });

  it("given two replicas, when the active one stops renewing but still answers (cut off from the bucket), then the other publishes once the grace has passed", async () => {
    const { got, active, standby } = await twoRelaying();
    active.stall();
    const next = await appendWidgets(3);
    // Within the grace the lease may still be alive: the standby waits for it to lapse.
    await pass(LEASE_MS + LEASE_MS / 3, { renewed: false });
    await tookOver(standby, got, next);
  });

  it("given one replica alone (a single process), when events are stored, then it publishes them without waiting", async () => {
    const got = received();
    const only = await replica();
    const ids = await appendWidgets(4);
    await expect.poll(() => got).toEqual(ids);
    expect(only.sent).toEqual(ids);
  });
});
