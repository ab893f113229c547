import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Decider, handleCommand } from "../src/decider.ts";
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
  type Thing = { name: string | undefined };
  type Named = { type: "Named"; data: { name: string } };
  /** A thing holds the name its last `Named` event gave it. */
  const thingDecider: Decider<Thing, { name: string }, Named> = {
    initialState: () => ({ name: undefined }),
    evolve: (_, event) => ({ name: event.data.name }),
    decide: ({ name }) => [{ type: "Named", data: { name } }],
  };
  const things = {
    stream: (holder: number) => `thing-${holder}`,
    decider: thingDecider,
    values: (state: Thing) => (state.name ? [`thingname-${state.name}`] : []),
  };
  const value = (holder: number, name = "brie") => ({
    stream: `thingname-${name}`,
    holder,
    whenTaken: "a thing with this name already exists",
    heldBy: things,
  });
  /** The thing takes the name: `Named` on its stream, the name's reservation written with it. */
  const name = (holder: number, thingName = "brie", on: EventStore = store) =>
    handleCommand(
      on,
      `thing-${holder}`,
      thingDecider,
      { name: thingName },
      { alongside: [reserveUnique({ store: on, clock }, value(holder, thingName))] },
    );
  const refused = { body: { status: 409, message: "a thing with this name already exists" } };

  beforeEach(() => {
    dir = tempDir("reservations");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    clock = new ManualClock("2026-11-22T10:00:00.000Z");
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("lets exactly one of racing holders take a value; the others write nothing", async () => {
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => name(i + 1)));
    const winners = outcomes.flatMap((outcome, i) => (outcome.status === "fulfilled" ? [i + 1] : []));
    expect(winners).toHaveLength(1);
    for (const outcome of outcomes.filter((o) => o.status === "rejected")) {
      expect((outcome as PromiseRejectedResult).reason).toMatchObject(refused);
    }
    for (let holder = 1; holder <= 6; holder++) {
      expect(await store.readStream(`thing-${holder}`)).toHaveLength(holder === winners[0] ? 1 : 0);
    }
    expect(await store.readStream("thingname-brie")).toMatchObject([
      { type: "Reserved", data: { holder: winners[0] } },
    ]);
  });

  it("writes no second reservation for a holder that has the value already", async () => {
    await name(1);
    await name(1);
    expect(await store.readStream("thing-1")).toHaveLength(2);
    expect(await store.readStream("thingname-brie")).toHaveLength(1);
  });

  it("keeps a value for a holder that has it, however old the reservation", async () => {
    await name(1);
    await clock.advance(10 * RESERVATION_STALE_AFTER_MS);
    await expect(name(2)).rejects.toMatchObject(refused);
    expect(await store.readStream("thing-2")).toEqual([]);
  });

  it("gives a value its holder no longer has a minute, then lets another take it over", async () => {
    await name(1);
    await name(1, "comté"); // renamed, and the release of brie lost
    await clock.advance(RESERVATION_STALE_AFTER_MS - 1);
    await expect(name(2)).rejects.toMatchObject(refused);
    await clock.advance(1);
    await name(2);
    expect((await store.readStream("thingname-brie")).at(-1)).toMatchObject({
      type: "Reserved",
      data: { holder: 2, replacing: 1 },
    });
    await expect(name(3)).rejects.toMatchObject(refused);
  });

  it("frees a released value at once", async () => {
    await name(1);
    await name(1, "comté"); // renamed: without the release, the name would wait out its minute
    await releaseUnique({ store }, value(1));
    await name(2);
  });

  it("refuses a value another replica reserved, and reserves one it released, though this one remembers neither", async () => {
    const replica = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    try {
      await name(1, "brie", replica);
      await expect(name(2)).rejects.toMatchObject(refused);
      await name(3, "comté", replica);
      await name(3, "gouda", replica);
      await releaseUnique({ store: replica }, value(3, "comté"));
      await name(4, "comté");
      await expect(name(5, "comté", replica)).rejects.toMatchObject(refused);
    } finally {
      await replica.close();
    }
  });

  it("dates a reservation recorded without a time by when it was recorded", async () => {
    await store.append("thingname-old", [{ type: "NameReserved", data: { cheeseId: 1 } }], {
      expectedRevision: "no_stream",
    });
    const recordedAt = Date.parse((await store.readStream("thingname-old"))[0]!.createdAt);
    clock = new ManualClock(new Date(recordedAt + 1000));
    await expect(name(2, "old")).rejects.toMatchObject(refused);
    await clock.advance(RESERVATION_STALE_AFTER_MS);
    await name(2, "old");
  });
});
