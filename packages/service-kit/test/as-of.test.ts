import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { foldStreamAsOf } from "../src/as-of.ts";
import type { DomainEvent } from "../src/decider.ts";

type Added = DomainEvent<"Added", { by: number }>;
const sum = {
  initialState: () => ({ total: 0 }),
  evolve: (state: { total: number }, event: Added) => ({ total: state.total + event.data.by }),
};

describe("a stream folded as of a moment, on the embedded event store", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  beforeEach(() => {
    dir = tempDir("as-of");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  const add = (by: number) =>
    store.append("sum-1", [{ type: "Added", data: { by } }], { expectedRevision: "any" });
  /** When the store recorded each event of the stream. */
  const recorded = async () => (await store.readStream("sum-1")).map((event) => Date.parse(event.createdAt));
  /** Until the clock has passed the last event's time, so the next one is recorded later. */
  const past = async (at: number) => expect.poll(() => Date.now()).toBeGreaterThan(at);

  it("folds the events recorded up to the moment, and names the last of them", async () => {
    await add(2);
    const [first] = await recorded();
    await past(first!);
    await add(3);
    const [, second] = await recorded();

    const then = await foldStreamAsOf(store, "sum-1", sum, first!);
    expect(then.state).toEqual({ total: 2 });
    expect(Date.parse(then.last!.createdAt)).toBe(first);
    expect((await foldStreamAsOf(store, "sum-1", sum, second! - 1)).state).toEqual({ total: 2 });
    expect((await foldStreamAsOf(store, "sum-1", sum, second!)).state).toEqual({ total: 5 });
    expect((await foldStreamAsOf(store, "sum-1", sum, Date.now())).last!.revision).toBe(1);
  });

  it("answers the initial state and no event before the stream began, and for no stream", async () => {
    await add(2);
    const [first] = await recorded();
    expect(await foldStreamAsOf(store, "sum-1", sum, first! - 1)).toEqual({
      state: { total: 0 },
      last: undefined,
    });
    expect(await foldStreamAsOf(store, "sum-2", sum, Date.now())).toEqual({
      state: { total: 0 },
      last: undefined,
    });
  });

  it("stops at the first event recorded after the moment, even when a later one reads earlier", async () => {
    const event = (revision: number, createdAt: string): RecordedEvent => ({
      id: `e${revision}`,
      streamName: "sum-1",
      type: "Added",
      data: { by: 10 ** revision },
      metadata: {},
      version: 1,
      revision,
      position: revision,
      createdAt,
    });
    // A clock stepped back between the second and the third append.
    const events = [
      event(0, "2026-03-01T10:00:00.000Z"),
      event(1, "2026-03-01T10:05:00.000Z"),
      event(2, "2026-03-01T10:01:00.000Z"),
    ];
    const stepped = { readStream: async () => events } as unknown as EventStore;
    const { state, last } = await foldStreamAsOf(
      stepped,
      "sum-1",
      sum,
      Date.parse("2026-03-01T10:02:00.000Z"),
    );
    expect(state).toEqual({ total: 1 });
    expect(last?.revision).toBe(0);
  });
});
