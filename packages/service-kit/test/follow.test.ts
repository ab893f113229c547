import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FOLLOW_RESTART_MAX_MS, type Follower, followStore } from "../src/follow.ts";
import { createLogger } from "../src/logger.ts";
import { ManualClock } from "../src/testing.ts";

const logger = createLogger("test", "silent");

describe("followStore", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let follower: Follower | undefined;
  beforeEach(() => {
    dir = tempDir("follow");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
  });
  afterEach(async () => {
    await follower?.close();
    follower = undefined;
    await store.close();
    dir.remove();
  });

  /** The store, whose subscriptions fail at once while `failing()` says so; counts subscriptions. */
  const flakyStore = (failing: () => boolean) => {
    const counted = { subscriptions: 0 };
    const flaky: EventStore = {
      ...store,
      subscribe: (options) => {
        counted.subscriptions += 1;
        if (!failing()) return store.subscribe(options);
        queueMicrotask(() => options.onError?.(new Error("connection lost")));
        return { close: async () => {} };
      },
    };
    return { flaky, counted };
  };

  /** A follower of `thing` events from the start that does nothing with them. */
  const idleFollower = (eventStore: EventStore, clock: ManualClock, onCaughtUp?: () => void) =>
    followStore({
      name: "test follower",
      eventStore,
      categories: ["thing"],
      logger,
      clock,
      after: () => undefined,
      handle: async () => {},
      ...(onCaughtUp ? { onCaughtUp } : {}),
    });

  const append = (n: number) =>
    store.append(`thing-${n}`, [{ type: "Made", data: { n } }], { expectedRevision: "no_stream" });

  it("restarts from its checkpoint after a failing event, pausing longer for each failure in a row", async () => {
    const clock = new ManualClock();
    await append(1);
    await append(2);
    let handled = -1;
    let failuresLeft = 3;
    const seen: number[] = [];
    follower = await followStore({
      name: "test follower",
      eventStore: store,
      categories: ["thing"],
      logger,
      clock,
      after: () => (handled === -1 ? undefined : handled),
      handle: async (event) => {
        if (event.streamName === "thing-2" && failuresLeft-- > 0) throw new Error("bad event");
        seen.push(event.position);
        handled = event.position;
      },
    });
    await expect.poll(() => follower?.failures).toBe(1);
    expect(seen).toHaveLength(1); // the first event, once: the restart starts after it
    // Pauses of 1 s, then 2 s, then 4 s: nothing is tried again before each is over.
    for (const [pause, failures] of [
      [1_000, 2],
      [2_000, 3],
    ] as const) {
      await clock.advance(pause - 1);
      expect(follower.failures).toBe(failures - 1);
      await clock.advance(1);
      await expect.poll(() => follower?.failures).toBe(failures);
    }
    await clock.advance(3_999);
    expect(seen).toHaveLength(1);
    await clock.advance(1);
    await expect.poll(() => seen).toHaveLength(2);
    expect(new Set(seen).size).toBe(2);
  });

  it("pauses at most FOLLOW_RESTART_MAX_MS, and back to 1 s once a run has caught up", async () => {
    const clock = new ManualClock();
    let fail = true;
    let caughtUp = 0;
    const { flaky } = flakyStore(() => fail);
    follower = await idleFollower(flaky, clock, () => {
      caughtUp += 1;
    });
    await expect.poll(() => follower?.failures).toBe(1);
    let pause = 1_000;
    for (let failures = 2; failures <= 8; failures++) {
      await clock.advance(pause);
      await expect.poll(() => follower?.failures).toBe(failures);
      pause = Math.min(pause * 2, FOLLOW_RESTART_MAX_MS);
    }
    expect(pause).toBe(FOLLOW_RESTART_MAX_MS);
    await clock.advance(FOLLOW_RESTART_MAX_MS - 1);
    expect(follower.failures).toBe(8);
    fail = false;
    await clock.advance(1);
    await expect.poll(() => caughtUp).toBe(1);
    // Caught up: the next failure pauses 1 s again.
    fail = true;
    follower.fail(new Error("publish failed"));
    await expect.poll(() => follower?.failures).toBe(9);
    await clock.advance(1_000);
    await expect.poll(() => follower?.failures).toBe(10);
  });

  it("a close during the pause cancels the restart", async () => {
    const clock = new ManualClock();
    const { flaky, counted } = flakyStore(() => true);
    const stopped = await idleFollower(flaky, clock);
    await expect.poll(() => stopped.failures).toBe(1);
    await stopped.close();
    await clock.advance(60_000);
    expect(counted.subscriptions).toBe(1);
  });
});
