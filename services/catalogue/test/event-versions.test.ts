import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { catalogueEvents, catalogueRpc, historyRpc } from "@cheese/contracts";
import { createSqliteEventStore, type EventMetadata } from "@cheese/event-store";
import { callRpc, consumeEvents, createInProcessBroker, RemoteError } from "@cheese/messaging";
import { createLogger, defineEventVersions, split, startService } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { catalogueService } from "../src/main.ts";

/**
 * A change of event shapes, made here on purpose, against a history the catalogue really wrote
 * (`fixtures/events-today.json`, recorded by `fixtures/record-events.ts`): suppose today's shapes
 * are version 2 of three event types, and version 1 was
 * - CheeseAdded, CheeseUpdated, CheeseStatusChanged: the cheese's `pricePerKg` called `price`;
 * - CheeseDeleted: the cheese's name called `cheeseName`;
 * - Reserved (a name's reservation): the holder called `by`.
 * The history stored in version 1 and read through the upcasters below must give the catalogue
 * exactly what the history stored today does: the same cheeses, lists, histories, reads as of a
 * moment, decisions and integration events.
 *
 * And a split: suppose an update that moved the status was once stored as one event, CheeseRevised
 * (the cheese after it, and the status `from` and `to`), where today's code writes CheeseUpdated
 * and CheeseStatusChanged in the same append. Its upcaster reads it as those two events.
 */
interface StoredEvent {
  id: string;
  stream: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  createdAt: string;
}
const today: StoredEvent[] = JSON.parse(
  readFileSync(new URL("./fixtures/events-today.json", import.meta.url), "utf8"),
);

type Cheese = Record<string, unknown>;
const renameKey = (from: string, to: string, object: Cheese): Cheese =>
  Object.fromEntries(Object.entries(object).map(([key, value]) => [key === from ? to : key, value]));

/** The same events in version 1 of their shapes: what older code would have stored. */
function asVersion1(event: StoredEvent): StoredEvent {
  const { data } = event;
  switch (event.type) {
    case "CheeseAdded":
    case "CheeseUpdated":
    case "CheeseStatusChanged":
      return { ...event, data: { ...data, cheese: renameKey("pricePerKg", "price", data.cheese as Cheese) } };
    case "CheeseDeleted":
      return { ...event, data: renameKey("name", "cheeseName", data) };
    case "Reserved":
      return { ...event, data: renameKey("holder", "by", data) };
    default:
      return event;
  }
}

const withPricePerKg = ({ cheese, ...rest }: { cheese: Cheese }) => ({
  ...rest,
  cheese: renameKey("price", "pricePerKg", cheese),
});
/** The upcasters that change makes, declared as the catalogue would declare them. */
const renames = [
  { type: "CheeseAdded", version: 2, upcast: withPricePerKg },
  { type: "CheeseUpdated", version: 2, upcast: withPricePerKg },
  { type: "CheeseStatusChanged", version: 2, upcast: withPricePerKg },
  { type: "CheeseDeleted", version: 2, upcast: (data: Cheese) => renameKey("cheeseName", "name", data) },
  { type: "Reserved", version: 2, upcast: (data: Cheese) => renameKey("by", "holder", data) },
];
const eventVersions = defineEventVersions(renames);

/** The old combined event, its parts in version 1 of their types (then upcast as any such). */
const splitting = defineEventVersions([
  ...renames,
  {
    type: "CheeseRevised",
    version: 2,
    upcast: ({ cheese, from, to }: { cheese: Cheese; from: string; to: string }) =>
      split(
        { type: "CheeseUpdated", data: { cheese } },
        { type: "CheeseStatusChanged", data: { cheese, from, to } },
      ),
  },
]);

/**
 * Today's history, where one request updated a cheese and moved its status: its CheeseUpdated and
 * CheeseStatusChanged, with the same cheese, recorded at one moment (as one append records them).
 */
function pairedToday(): { events: StoredEvent[]; pair: [number, number] } {
  const at = today.findIndex(
    (event, i) =>
      event.type === "CheeseUpdated" &&
      today[i + 1]?.type === "CheeseStatusChanged" &&
      today[i + 1]?.metadata.requestId === event.metadata.requestId,
  );
  const [updated, changed] = [today[at]!, today[at + 1]!];
  expect(changed.data.cheese).toEqual(updated.data.cheese);
  const events = today.map((event, i) => (i === at + 1 ? { ...event, createdAt: updated.createdAt } : event));
  return { events, pair: [at, at + 1] };
}

/** That history as older code stored it: version 1 shapes, the pair one CheeseRevised. */
function combined({ events, pair: [first, second] }: ReturnType<typeof pairedToday>): StoredEvent[] {
  const old = events.map(asVersion1);
  const updated = old[first]!;
  const { from, to } = old[second]!.data;
  const revised = {
    ...updated,
    type: "CheeseRevised",
    data: { cheese: updated.data.cheese, from, to },
  };
  return [...old.slice(0, first), revised, ...old.slice(second + 1)];
}

const dirs: Array<{ remove(): void }> = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) dir.remove();
});

/** The catalogue's store under a new DATA_DIR holding `events`, each recorded at its own time. */
async function dataDirWith(events: StoredEvent[]): Promise<string> {
  const dir = tempDir("catalogue-versions");
  dirs.push(dir);
  mkdirSync(join(dir.path, "catalogue"));
  const store = createSqliteEventStore({ file: join(dir.path, "catalogue", "events.sqlite") });
  vi.useFakeTimers({ toFake: ["Date"] });
  try {
    for (const { id, stream, type, data, metadata, createdAt } of events) {
      vi.setSystemTime(new Date(createdAt));
      await store.append(stream, [{ id, type, data, metadata }], { expectedRevision: "any" });
    }
  } finally {
    vi.useRealTimers();
    await store.close();
  }
  return dir.path;
}

/** Everything a client of the catalogue can see of that history, and what it then decides. */
async function observe(dataDir: string, versions?: typeof eventVersions, history: StoredEvent[] = today) {
  const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  const published: Array<{ subject: string; payload: unknown }> = [];
  /** The ids the relay published under (the bus's deduplication key), apart: a decision's are new. */
  const messageIds: string[] = [];
  const consumer = consumeEvents(broker.connect(), {
    durable: "test-versions",
    events: Object.values(catalogueEvents),
    handler: async ({ id, subject, payload }) => {
      published.push({ subject, payload });
      messageIds.push(id);
    },
    onInvalid: (_, error) => {
      throw error;
    },
  });
  const service = await startService(
    { ...catalogueService, ...(versions ? { eventVersions: versions } : {}) },
    {
      env: { DATA_DIR: dataDir, LOG_LEVEL: "silent" },
      bus: broker.connect(),
      logger: createLogger("catalogue", "silent"),
      clock: new ManualClock(new Date("2026-04-01T12:00:00.000Z")),
    },
  );
  const client = broker.connect();
  const call = <T>(rpc: Parameters<typeof callRpc>[1], payload: unknown): Promise<T | { refused: number }> =>
    (callRpc(client, rpc, payload as never, { timeoutMs: 5_000 }) as Promise<T>).catch((error: unknown) => {
      if (error instanceof RemoteError) return { refused: error.body.status };
      throw error;
    });
  try {
    const ids = [1, 2, 3, 4];
    const cheeseEvents = history.filter((event) => event.stream.startsWith("cheese-"));
    const reads = {
      cheeses: await Promise.all(ids.map((cheeseId) => call(catalogueRpc.getCheese, { cheeseId }))),
      list: await call(catalogueRpc.listCheeses, { limit: 100, filters: {} }),
      byCreation: await call(catalogueRpc.listCheeses, { limit: 100, filters: {}, sort: "createdAt" }),
      found: await call(catalogueRpc.findCheeses, { status: ["available", "sold", "pending"] }),
      inventory: await call(catalogueRpc.inventory, {}),
      histories: await Promise.all(ids.map((cheeseId) => call(historyRpc.cheese, { cheeseId, limit: 100 }))),
      // Half a minute after each event of each cheese, and before the first.
      asOf: await Promise.all(
        cheeseEvents.flatMap(({ stream, createdAt }) => {
          const cheeseId = Number(stream.slice("cheese-".length));
          const moment = (offset: number) => new Date(Date.parse(createdAt) + offset).toISOString();
          return [-30_000, 30_000].map((offset) =>
            call(catalogueRpc.getCheeseAsOf, { cheeseId, asOf: moment(offset) }),
          );
        }),
      ),
    };
    const decided = {
      // Decided on the folded state: the revision, the price kept, the status moved.
      updated: await call(catalogueRpc.updateCheese, { cheeseId: 1, changes: { status: "available" } }),
      // The name is held by cheese 4 (its reservation read, its holder looked up): 409.
      renamed: await call(catalogueRpc.updateCheese, {
        cheeseId: 2,
        changes: { name: "Manchego", category: null },
      }),
      // A deleted cheese is not found.
      deletedAgain: await call(catalogueRpc.updateCheese, { cheeseId: 3, changes: { pricePerKg: 1 } }),
      after: await call(catalogueRpc.getCheese, { cheeseId: 1 }),
    };
    // Every cheese event of the history, and the status change decided, reach the bus.
    await expect.poll(() => published.length).toBe(cheeseEvents.length + 1);
    return { reads, decided, published, messageIds };
  } finally {
    await service.stop();
    await consumer.close();
    await client.close();
  }
}

describe("events whose shape changed", () => {
  it("read through their upcasters give what today's shapes give: reads, decisions, integration events", async () => {
    const { messageIds: _, ...expected } = await observe(await dataDirWith(today));
    // What the history holds, for the comparison to mean something.
    expect(expected.reads.cheeses[0]).toMatchObject({ cheese: { name: "Brie de Meaux", pricePerKg: 26 } });
    expect(expected.reads.cheeses[2]).toEqual({ refused: 404 });
    expect(expected.decided.updated).toMatchObject({ cheese: { pricePerKg: 26, status: "available" } });
    expect(expected.decided.renamed).toEqual({ refused: 409 });

    const dataDir = await dataDirWith(today.map(asVersion1));
    const { messageIds: __, ...seen } = await observe(dataDir, eventVersions);
    expect(seen).toEqual(expected);

    // What the new code appended is stored in today's shape, as version 2.
    const store = createSqliteEventStore({ file: join(dataDir, "catalogue", "events.sqlite") });
    try {
      const [first, last] = [
        (await store.readStream("cheese-1")).at(0)!,
        (await store.readStream("cheese-1")).at(-1)!,
      ];
      expect(first).toMatchObject({ type: "CheeseAdded", version: 1, data: { cheese: { price: 24.5 } } });
      expect(last).toMatchObject({
        type: "CheeseStatusChanged",
        version: 2,
        data: { cheese: { pricePerKg: 26 } },
      });
    } finally {
      await store.close();
    }
  });

  it("a split event, read through its upcaster, gives what today's two events give", async () => {
    const paired = pairedToday();
    const { messageIds: _, ...expected } = await observe(
      await dataDirWith(paired.events),
      undefined,
      paired.events,
    );
    // The pair shows in cheese 3's history: updated, then moved to pending.
    expect(expected.reads.histories[2]).toMatchObject({
      items: expect.arrayContaining([
        expect.objectContaining({ type: "cheese.updated", at: "2026-03-02T09:17:00.000Z" }),
        {
          type: "cheese.status_changed",
          at: "2026-03-02T09:17:00.000Z",
          data: { from: "available", to: "pending" },
        },
      ]),
    });
    const old = combined(paired);
    expect(old).toHaveLength(today.length - 1);
    const dataDir = await dataDirWith(old);
    const { messageIds, ...seen } = await observe(dataDir, splitting, paired.events);
    expect(seen).toEqual(expected);
    // Its parts are published under ids of their own, made from the stored event's.
    const stored = today[paired.pair[0]]!.id;
    expect(messageIds).toEqual(expect.arrayContaining([`${stored}#1`, `${stored}#2`]));
    expect(messageIds).not.toContain(stored);

    // Without the split's upcaster the catalogue cannot read the combined event (it fails on it).
    const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
    const service = await startService(
      { ...catalogueService, eventVersions },
      {
        env: { DATA_DIR: dataDir, LOG_LEVEL: "silent" },
        bus: broker.connect(),
        logger: createLogger("catalogue", "silent"),
      },
    );
    try {
      const history = await callRpc(
        broker.connect(),
        historyRpc.cheese,
        { cheeseId: 3, limit: 100 },
        { timeoutMs: 5_000 },
      ).catch((error: unknown) => error);
      expect(history).not.toEqual(expected.reads.histories[2]);
    } finally {
      await service.stop();
    }
  });

  it("read without the upcasters give something else (so the test above can fail)", async () => {
    const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
    const dataDir = await dataDirWith(today.map(asVersion1));
    const service = await startService(catalogueService, {
      env: { DATA_DIR: dataDir, LOG_LEVEL: "silent" },
      bus: broker.connect(),
      logger: createLogger("catalogue", "silent"),
    });
    try {
      const { cheese } = await callRpc(
        broker.connect(),
        catalogueRpc.getCheese,
        { cheeseId: 1 },
        { timeoutMs: 5_000 },
      );
      expect(cheese.pricePerKg).toBeUndefined();
    } finally {
      await service.stop();
    }
  });
});
