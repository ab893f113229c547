import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { startProjection } from "../src/projection.ts";

describe("projection read-your-writes", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("projection");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("does not call itself caught up while an event of its own lies behind many of other categories", async () => {
    let openGate: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    const seen: string[] = [];
    const projection = await startProjection({
      name: "things",
      eventStore: store,
      readModels: createMemoryReadModels(),
      categories: ["thing"],
      logger: createLogger("test", "silent"),
      apply: async (event) => {
        await gate; // a projection that lags behind the writes
        seen.push(event.streamName);
      },
    });
    for (let i = 0; i < 12; i++) {
      const others = Array.from({ length: 100 }, (_, j) => ({ type: "Other", data: { j } }));
      await store.append(`other-${i}`, others, { expectedRevision: "no_stream" });
    }
    await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });

    try {
      expect(await projection.catchUp(200)).toBe(false);
    } finally {
      openGate(); // always, so the projection can close even when the expectation fails
    }
    expect(await projection.catchUp(5000)).toBe(true);
    expect(seen).toEqual(["thing-1"]);
    await projection.close();
  });

  it("is caught up at once when only other categories were written since", async () => {
    const projection = await startProjection({
      name: "things",
      eventStore: store,
      readModels: createMemoryReadModels(),
      categories: ["thing"],
      logger: createLogger("test", "silent"),
      apply: async () => {},
    });
    await store.append("thing-1", [{ type: "Made", data: {} }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(5000)).toBe(true);
    await store.append("other-1", [{ type: "Other", data: {} }], { expectedRevision: "no_stream" });
    expect(await projection.catchUp(0)).toBe(true);
    await projection.close();
  });
});
