import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Decider, type DomainEvent, foldEvents, handleCommand } from "../src/decider.ts";
import { type DueTimers, dueTimers } from "../src/due-timers.ts";
import { createLogger } from "../src/logger.ts";
import { ManualClock } from "../src/testing.ts";

const start = "2026-11-22T10:00:00.000Z";
const at = (ms: number) => Date.parse(start) + ms;
const logger = createLogger("test", "silent");

describe("due timers", () => {
  let clock: ManualClock;
  let ran: string[];
  let timers: DueTimers<string>;
  const given = (
    run: (key: string) => Promise<void> = async (key) => void ran.push(key),
    concurrency = 8,
  ) => {
    timers = dueTimers<string>({ name: "test work", clock, logger, run, concurrency });
    return timers;
  };

  beforeEach(() => {
    clock = new ManualClock(start);
    ran = [];
  });
  afterEach(() => timers.close());

  it("runs a key when the clock reaches its time, not a millisecond before, and once", async () => {
    given();
    timers.set("a", at(1000));
    timers.set("b", at(500));
    await clock.advance(499);
    expect(ran).toEqual([]);
    await clock.advance(1);
    expect(ran).toEqual(["b"]);
    await clock.advance(500);
    expect(ran).toEqual(["b", "a"]);
    await clock.advance(60_000);
    expect(ran).toEqual(["b", "a"]);
    expect(timers.dueAt("a")).toBeUndefined();
  });

  it("runs at once a key whose time has passed", async () => {
    given();
    timers.set("late", at(-1));
    await timers.settle();
    expect(ran).toEqual(["late"]);
  });

  it("never runs a deleted key, and runs a key set again at its new time only", async () => {
    given();
    timers.set("gone", at(100));
    timers.set("moved", at(100));
    timers.delete("gone");
    timers.set("moved", at(300));
    await clock.advance(299);
    expect(ran).toEqual([]);
    await clock.advance(1);
    expect(ran).toEqual(["moved"]);
  });

  it("tries a failed run again after 1 s, then 2 s, until it succeeds", async () => {
    let failures = 2;
    given(async (key) => {
      ran.push(key);
      if (failures-- > 0) throw new Error("down");
    });
    timers.set("flaky", at(0));
    await timers.settle();
    expect(ran).toEqual(["flaky"]);
    await clock.advance(999);
    expect(ran).toHaveLength(1);
    await clock.advance(1);
    await timers.settle();
    expect(ran).toHaveLength(2);
    await clock.advance(1999);
    expect(ran).toHaveLength(2);
    await clock.advance(1);
    await timers.settle();
    expect(ran).toHaveLength(3);
    await clock.advance(60_000);
    expect(ran).toHaveLength(3);
  });

  it("runs at most `concurrency` keys at once, the earliest due first", async () => {
    const release: (() => void)[] = [];
    given(
      (key) =>
        new Promise<void>((resolve) => {
          ran.push(key);
          release.push(resolve);
        }),
      2,
    );
    timers.set("third", at(3));
    timers.set("first", at(1));
    timers.set("second", at(2));
    await clock.advance(3);
    expect(ran).toEqual(["first", "second"]);
    release.shift()!();
    await expect.poll(() => ran).toEqual(["first", "second", "third"]);
    for (const done of release) done();
    await timers.settle();
  });
});

describe("due timers over an event store: once across replicas, rebuilt at a restart", () => {
  /** A reminder that is sent once: `Send` decides nothing once `Sent` is recorded. */
  type Reminder = { dueAt: number; sent: boolean } | undefined;
  type ReminderEvent = DomainEvent<"Due", { dueAt: number }> | DomainEvent<"Sent", { by: string }>;
  const reminders: Decider<Reminder, { type: "Send"; by: string }, ReminderEvent> = {
    initialState: () => undefined,
    evolve: (state, event) =>
      event.type === "Due" ? { dueAt: event.data.dueAt, sent: false } : { dueAt: state!.dueAt, sent: true },
    decide: (command, state) => (state && !state.sent ? [{ type: "Sent", data: { by: command.by } }] : []),
  };

  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let clock: ManualClock;
  const replicas: DueTimers<string>[] = [];

  /** A replica: its set derived from the store (every reminder not sent), its work a command. */
  const replica = async (name: string) => {
    const timers = dueTimers<string>({
      name: "reminder",
      clock,
      logger,
      run: async (stream) => {
        await handleCommand(store, stream, reminders, { type: "Send", by: name });
      },
    });
    replicas.push(timers);
    for (const id of ["reminder-1", "reminder-2"]) {
      const state = foldEvents(reminders, await store.readStream(id));
      if (state && !state.sent) timers.set(id, state.dueAt);
    }
    return timers;
  };

  beforeEach(async () => {
    dir = tempDir("due-timers");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    clock = new ManualClock(start);
    await store.append("reminder-1", [{ type: "Due", data: { dueAt: at(1000) } }], {
      expectedRevision: "no_stream",
    });
    await store.append("reminder-2", [{ type: "Due", data: { dueAt: at(5000) } }], {
      expectedRevision: "no_stream",
    });
  });
  afterEach(async () => {
    await Promise.all(replicas.splice(0).map((timers) => timers.close()));
    await store.close();
    dir.remove();
  });

  const sent = async (id: string) => (await store.readStream(id)).filter((event) => event.type === "Sent");

  it("records a due key's outcome once though every replica runs it", async () => {
    const [one, two, three] = await Promise.all([replica("one"), replica("two"), replica("three")]);
    await clock.advance(1000);
    await Promise.all([one!.settle(), two!.settle(), three!.settle()]);
    expect(await sent("reminder-1")).toHaveLength(1);
    expect(await sent("reminder-2")).toHaveLength(0);
  });

  it("has, after a restart, what was due before it and not done: the set comes from the store", async () => {
    const before = await replica("before");
    await clock.advance(1000);
    await before.settle();
    await before.close();
    await clock.advance(10_000); // reminder-2 fell due while no replica ran
    const after = await replica("after");
    await after.settle();
    expect((await sent("reminder-2")).map((event) => event.data)).toEqual([{ by: "after" }]);
    expect(await sent("reminder-1")).toHaveLength(1);
  });
});
