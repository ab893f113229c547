import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { type CollectionDefinition, createMemoryReadModels, type ReadModelStore } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { metricsRegistry } from "../src/metrics.ts";
import { type ApplyContext, startProjection } from "../src/projection.ts";

const things: CollectionDefinition = {
  name: "things",
  indexes: [],
  queries: [{ name: "every thing (the tests look)", filter: {}, scans: "a handful of test documents" }],
};

/** The log lines a logger wrote, parsed. */
function capturedLogger() {
  const lines: { msg: string; [field: string]: unknown }[] = [];
  const logger = createLogger("test", "info", {
    write: (line: string) => {
      lines.push(JSON.parse(line));
    },
  });
  return { logger, lines };
}

/**
 * Rebuilds without downtime (docs/architecture.md): a rebuild on request writes a new generation
 * beside the one reads reach; reads keep their answers (and read-your-writes) until it has caught
 * up, then switch to it, and the old one is dropped.
 */
describe("a projection rebuilt beside its live read models", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("projection-rebuild");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  const things$ = (readModels: ReadModelStore) =>
    readModels.collection<{ _id: number; value: number; by: string }>("things").find({});

  it("answers from the old generation until the new one has caught up, then from the new one; the old is dropped", async () => {
    for (let id = 1; id <= 50; id++)
      await store.append(`thing-${id}`, [{ type: "Set", data: { value: id } }], {
        expectedRevision: "no_stream",
      });
    const readModels = createMemoryReadModels();
    const { logger, lines } = capturedLogger();
    /** What `apply` writes into the documents, to tell the generations apart. */
    let writer = "first build";
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const seenByRebuild: RecordedEvent[] = [];
    /** What `apply` was told of each event: side effects belong to the run reads reach. */
    const told: { stream: string; rebuilding: boolean }[] = [];
    const projection = await startProjection({
      name: "things",
      version: 1,
      collections: [things],
      eventStore: store,
      readModels,
      categories: ["thing"],
      logger,
      rebuildLogEveryMs: 20,
      apply: async (event, models, { rebuilding }: ApplyContext) => {
        told.push({ stream: event.streamName, rebuilding });
        if (rebuilding) {
          seenByRebuild.push(event);
          // The rebuild stops after its first events until the test lets it go on.
          if (seenByRebuild.length > 10) await gate;
        }
        const id = Number(event.streamName.split("-")[1]);
        await models.collection("things").upsert(id, event.revision, {
          $set: { value: (event.data as { value: number }).value, by: writer },
        });
      },
    });
    await projection.ready;
    const before = await readModels.liveGeneration({ name: "things", version: 1, collections: [things] }, 1);
    expect(await things$(readModels)).toHaveLength(50);

    writer = "rebuild";
    const rebuilt = projection.rebuild();
    // Asked again while it runs: the same rebuild, not a second one.
    expect(projection.rebuild()).toBe(rebuilt);
    await expect.poll(() => seenByRebuild.length).toBe(11);
    // Meanwhile reads answer the old generation, whole...
    const during = await things$(readModels);
    expect(during).toHaveLength(50);
    expect(new Set(during.map((thing) => thing.by))).toEqual(new Set(["first build"]));
    // ...its progress is a metric and a log line...
    expect(await metricsRegistry.getSingleMetricAsString("cheese_projection_rebuild_progress_ratio")).toMatch(
      /cheese_projection_rebuild_progress_ratio\{projection="things"\} 0\.\d+/,
    );
    await expect.poll(() => lines.some((line) => line.msg === "projection rebuild progress")).toBe(true);
    // ...and a write is read back: the live generation keeps following the events.
    await store.append("thing-51", [{ type: "Set", data: { value: 51 } }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(5_000)).toBe(true);
    expect((await things$(readModels)).find((thing) => thing._id === 51)).toMatchObject({ value: 51 });

    openGate();
    const outcome = await rebuilt;
    expect(outcome).toMatchObject({ version: 1, generation: 1 });
    expect(outcome.events).toBeGreaterThanOrEqual(51);
    const after = await things$(readModels);
    expect(after).toHaveLength(51);
    expect(new Set(after.map((thing) => thing.by))).toEqual(new Set(["rebuild"]));
    // The old generation is gone, its collections and checkpoint with it; the metric too.
    expect(await before!.collection("things").find({})).toEqual([]);
    expect(await readModels.getCheckpoint(before!.key)).toBeUndefined();
    expect(
      await metricsRegistry.getSingleMetricAsString("cheese_projection_rebuild_progress_ratio"),
    ).not.toMatch(/projection="things"/);
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining([
        "projection rebuild started beside the live read models",
        "projection rebuilt: reads switched to it",
      ]),
    );
    // After the switch, new events reach the new generation.
    await store.append("thing-52", [{ type: "Set", data: { value: 52 } }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(5_000)).toBe(true);
    expect((await things$(readModels)).find((thing) => thing._id === 52)).toMatchObject({ by: "rebuild" });
    // The event written during the rebuild was applied by both runs, told apart; the one after the
    // switch by the new run only, as the served one.
    expect(told.filter((entry) => entry.stream === "thing-51")).toEqual(
      expect.arrayContaining([
        { stream: "thing-51", rebuilding: false },
        { stream: "thing-51", rebuilding: true },
      ]),
    );
    expect(told.filter((entry) => entry.stream === "thing-52")).toEqual([
      { stream: "thing-52", rebuilding: false },
    ]);
    await projection.close();
  });

  it("replicas sharing durable read models: one rebuilds, the others move to the new generation, the old goes after a grace", async () => {
    for (let id = 1; id <= 20; id++)
      await store.append(`thing-${id}`, [{ type: "Set", data: { value: id } }], {
        expectedRevision: "no_stream",
      });
    // MongoDB's sharing, in memory: one store for both replicas, and said to be durable.
    const shared: ReadModelStore = { ...createMemoryReadModels(), durable: true };
    const replica = () =>
      startProjection({
        name: "things",
        version: 1,
        collections: [things],
        eventStore: store,
        readModels: shared,
        categories: ["thing"],
        logger: createLogger("test", "silent"),
        generationCheckMs: 20,
        dropAfterMs: 300,
        apply: async (event, models) => {
          const id = Number(event.streamName.split("-")[1]);
          await models
            .collection("things")
            .upsert(id, event.revision, { $set: { value: (event.data as { value: number }).value } });
        },
      });
    const [a, b] = [await replica(), await replica()];
    await Promise.all([a.ready, b.ready]);
    const definition = { name: "things", version: 1, collections: [things] };
    const before = await shared.liveGeneration(definition, 1);

    expect(await a.rebuild()).toMatchObject({ generation: 1 });
    // Kept a while for the replicas that have not looked yet, then dropped.
    expect(await before!.collection("things").count()).toBe(20);
    await expect.poll(() => before!.collection("things").count()).toBe(0);
    await a.close();
    // Only b is left: what it applies now lands in the generation reads reach.
    await store.append("thing-21", [{ type: "Set", data: { value: 21 } }], { expectedRevision: "no_stream" });
    expect(await b.catchUp(5_000)).toBe(true);
    expect(await shared.collection("things").findOne({ _id: 21 })).toMatchObject({ value: 21 });
    await b.close();
  });

  it("a version change: the previous version answers at once, the new one takes over once built", async () => {
    for (let id = 1; id <= 30; id++)
      await store.append(`thing-${id}`, [{ type: "Set", data: { value: id } }], {
        expectedRevision: "no_stream",
      });
    const readModels = createMemoryReadModels(); // kept across the "restart", as MongoDB would be
    const start = (version: number, apply: (event: RecordedEvent, models: ReadModelStore) => Promise<void>) =>
      startProjection({
        name: "things",
        version,
        collections: [things],
        eventStore: store,
        readModels,
        categories: ["thing"],
        logger: createLogger("test", "silent"),
        apply,
      });
    const v1 = await start(1, async (event, models) => {
      const id = Number(event.streamName.split("-")[1]);
      await models
        .collection("things")
        .upsert(id, event.revision, { $set: { value: (event.data as { value: number }).value } });
    });
    await v1.ready;
    await v1.close();

    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const v2 = await start(2, async (event, models) => {
      await gate; // the new version's build (and the previous one's following) waits for the test
      const id = Number(event.streamName.split("-")[1]);
      await models
        .collection("things")
        .upsert(id, event.revision, { $set: { amount: { value: (event.data as { value: number }).value } } });
    });
    // Ready at once, on the previous version's documents, though not one event is applied yet.
    await v2.ready;
    const during = await readModels.collection("things").find({});
    expect(during).toHaveLength(30);
    expect(during.every((thing) => "value" in thing)).toBe(true);

    openGate();
    await expect
      .poll(async () => (await readModels.collection("things").find({})).every((thing) => "amount" in thing))
      .toBe(true);
    expect(await readModels.collection("things").count()).toBe(30);
    await v2.close();
  });
});
