import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  RESERVATION_STALE_AFTER_MS,
  type ReservationEvent,
  releaseUnique,
  reservationDecider,
  reserveUnique,
} from "../src/reservations.ts";
import { ManualClock, specFor } from "../src/testing.ts";

describe("the reservation decider", () => {
  const given = specFor(reservationDecider("username already exists"));
  const at = "2026-11-22T10:00:00.000Z";
  const reserved = (holder: number): ReservationEvent => ({ type: "Reserved", data: { holder, at } });

  it("reserves a free value", () => {
    given([])
      .when({ type: "Reserve", holder: 1, at })
      .thenEmits([reserved(1)]);
  });

  it("refuses a value another holder has, with the kind's 409", () => {
    given([reserved(1)])
      .when({ type: "Reserve", holder: 2, at })
      .thenRefuses({ body: { status: 409, type: "conflict", message: "username already exists" } });
  });

  it("takes a value over from the holder named as replaced, and only from that one", () => {
    given([reserved(1)])
      .when({ type: "Reserve", holder: 2, at, replacing: 1 })
      .thenEmits([{ type: "Reserved", data: { holder: 2, at, replacing: 1 } }]);
    given([reserved(1)])
      .when({ type: "Reserve", holder: 2, at, replacing: 9 })
      .thenRefuses({ body: { status: 409 } });
  });

  it("is idempotent for the holder", () => {
    given([reserved(1)])
      .when({ type: "Reserve", holder: 1, at })
      .thenEmits([]);
  });

  it("lets the value be taken again once released, and only by its holder", () => {
    given([reserved(1), { type: "Released", data: { holder: 1 } }])
      .when({ type: "Reserve", holder: 2, at })
      .thenEmits([reserved(2)]);
    given([reserved(1)])
      .when({ type: "Release", holder: 2 })
      .thenEmits([]);
  });

  it("reads the reservations the catalogue and the customer service recorded before they shared this one", () => {
    const legacy = (type: string, data: object) => ({ type, data }) as unknown as ReservationEvent;
    given([legacy("NameReserved", { cheeseId: 1 })])
      .when({ type: "Reserve", holder: 2, at })
      .thenRefuses({ body: { status: 409 } });
    given([legacy("NameReserved", { cheeseId: 1 }), legacy("NameReleased", { cheeseId: 1 })])
      .when({ type: "Reserve", holder: 2, at })
      .thenEmits([reserved(2)]);
    given([legacy("Reserved", { customerId: 1 })])
      .when({ type: "Reserve", holder: 1, at })
      .thenEmits([]);
    given([legacy("Reserved", { customerId: 1 }), legacy("Released", { customerId: 1 })])
      .when({ type: "Reserve", holder: 2, at })
      .thenEmits([reserved(2)]);
  });
});

describe("reserveUnique on a real event store", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let clock: ManualClock;
  /** A thing holds the name its last `Named` event gave it. */
  const things = {
    stream: (holder: number) => `thing-${holder}`,
    decider: {
      initialState: () => ({ name: undefined as string | undefined }),
      evolve: (_: { name: string | undefined }, event: { type: string; data: unknown }) => ({
        name: (event.data as { name: string }).name,
      }),
    },
    values: (state: { name: string | undefined }) => (state.name ? [`thingname-${state.name}`] : []),
  };
  const value = (holder: number, name = "brie") => ({
    stream: `thingname-${name}`,
    holder,
    whenTaken: "a thing with this name already exists",
    heldBy: things,
  });
  /** The holder's own stream says it has the name now. */
  const named = (on: EventStore, holder: number, name: string) =>
    on.append(`thing-${holder}`, [{ type: "Named", data: { name } }], { expectedRevision: "any" });

  beforeEach(() => {
    dir = tempDir("reservations");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    clock = new ManualClock("2026-11-22T10:00:00.000Z");
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("lets exactly one of racing holders reserve a value", async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => reserveUnique({ store, clock }, value(i + 1))),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => o.status === "rejected")) {
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({
        body: { status: 409, message: "a thing with this name already exists" },
      });
    }
  });

  it("keeps a value for a holder that has it, however old the reservation", async () => {
    await reserveUnique({ store, clock }, value(1));
    await named(store, 1, "brie");
    await clock.advance(10 * RESERVATION_STALE_AFTER_MS);
    await expect(reserveUnique({ store, clock }, value(2))).rejects.toMatchObject({ body: { status: 409 } });
  });

  it("gives a value its holder never wrote a minute to be written, then lets another take it over", async () => {
    await reserveUnique({ store, clock }, value(1));
    await clock.advance(RESERVATION_STALE_AFTER_MS - 1);
    await expect(reserveUnique({ store, clock }, value(2))).rejects.toMatchObject({ body: { status: 409 } });
    await clock.advance(1);
    await reserveUnique({ store, clock }, value(2));
    await expect(reserveUnique({ store, clock }, value(3))).rejects.toMatchObject({ body: { status: 409 } });
  });

  it("frees a released value at once", async () => {
    await reserveUnique({ store, clock }, value(1));
    await named(store, 1, "comté"); // renamed: without the release, the name would wait out its minute
    await releaseUnique({ store }, value(1));
    await reserveUnique({ store, clock }, value(2));
  });

  it("refuses a value another replica reserved, and reserves one it released, though this one remembers neither", async () => {
    const replica = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    try {
      await reserveUnique({ store: replica, clock }, value(1));
      await expect(reserveUnique({ store, clock }, value(2))).rejects.toMatchObject({
        body: { status: 409 },
      });
      await reserveUnique({ store: replica, clock }, value(3, "comté"));
      await named(replica, 3, "gouda");
      await releaseUnique({ store: replica }, value(3, "comté"));
      await reserveUnique({ store, clock }, value(4, "comté"));
      await expect(reserveUnique({ store: replica, clock }, value(5, "comté"))).rejects.toMatchObject({
        body: { status: 409 },
      });
    } finally {
      await replica.close();
    }
  });

  it("dates a reservation recorded without a time by when it was recorded", async () => {
    await store.append("thingname-old", [{ type: "NameReserved", data: { cheeseId: 1 } }], {
      expectedRevision: "no_stream",
    });
    const recordedAt = Date.parse((await store.readStream("thingname-old"))[0]!.createdAt);
    const fresh = new ManualClock(new Date(recordedAt + 1000));
    await expect(reserveUnique({ store, clock: fresh }, value(2, "old"))).rejects.toMatchObject({
      body: { status: 409 },
    });
    await fresh.advance(RESERVATION_STALE_AFTER_MS);
    await reserveUnique({ store, clock: fresh }, value(2, "old"));
  });
});
