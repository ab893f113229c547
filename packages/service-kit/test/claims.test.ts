import { createSqliteEventStore, type EventStore, type RecordedEvent } from "@cheese/event-store";
import { tempDir } from "@cheese/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  CLAIM_TAKEOVER_AFTER_MS,
  type ClaimEvent,
  claimDecider,
  claimOnce,
  KEY_REUSED,
} from "../src/claims.ts";
import { conflict, unavailable } from "../src/errors.ts";
import { ManualClock, specFor } from "../src/testing.ts";

describe("the claim decider", () => {
  const given = specFor(claimDecider);
  const at = "2026-11-22T10:00:00.000Z";
  const claimed: ClaimEvent = { type: "Claimed", data: { id: 5, fingerprint: "a", claimedAt: at } };

  it("claims an id for a new key", () => {
    given([]).when({ type: "Claim", id: 5, fingerprint: "a", at }).thenEmits([claimed]);
  });

  it("keeps the first id for a repeat of the same request", () => {
    given([claimed])
      .when({ type: "Claim", id: 6, fingerprint: "a", at: "2026-11-23T09:59:59.000Z" })
      .thenEmits([]);
  });

  it("refuses the key for a different request with 409", () => {
    given([claimed])
      .when({ type: "Claim", id: 6, fingerprint: "b", at: "2026-11-22T10:00:05.000Z" })
      .thenRefuses({ body: { status: 409, type: "conflict", message: KEY_REUSED } });
  });

  it("still holds the key just under 24 h later", () => {
    given([claimed])
      .when({ type: "Claim", id: 6, fingerprint: "b", at: "2026-11-23T09:59:59.999Z" })
      .thenRefuses({ body: { status: 409 } });
  });

  it("lets the key be claimed afresh, with any body, once 24 h have passed", () => {
    const later = "2026-11-23T10:00:00.000Z";
    given([claimed])
      .when({ type: "Claim", id: 9, fingerprint: "b", at: later })
      .thenEmits([{ type: "Claimed", data: { id: 9, fingerprint: "b", claimedAt: later } }]);
  });

  it("keys a repeat to the newest claim after a fresh one", () => {
    const renewed: ClaimEvent = {
      type: "Claimed",
      data: { id: 9, fingerprint: "b", claimedAt: "2026-11-23T10:00:00.000Z" },
    };
    given([claimed, renewed])
      .when({ type: "Claim", id: 10, fingerprint: "b", at: "2026-11-23T10:00:01.000Z" })
      .thenEmits([]);
    given([claimed, renewed])
      .when({ type: "Claim", id: 10, fingerprint: "a", at: "2026-11-23T10:00:01.000Z" })
      .thenRefuses({ body: { status: 409 } });
  });

  it("records the refusal the claimed work met once, for the claim it met it under", () => {
    const refusal = { status: 422, type: "validation_error", message: "no such cheese", errors: [] };
    const refused: ClaimEvent = { type: "ClaimRefused", data: { id: 5, refusal } };
    given([claimed]).when({ type: "RecordRefusal", id: 5, refusal }).thenEmits([refused]);
    given([claimed, refused]).when({ type: "RecordRefusal", id: 5, refusal }).thenEmits([]);
    given([claimed]).when({ type: "RecordRefusal", id: 6, refusal }).thenEmits([]);
  });

  it("reads the claims the catalogue and ordering recorded before they shared this one", () => {
    const cheese = { type: "CheeseRequestClaimed", data: { cheeseId: 5, fingerprint: "a", claimedAt: at } };
    given([cheese as unknown as ClaimEvent])
      .when({ type: "Claim", id: 6, fingerprint: "b", at })
      .thenRefuses({ body: { status: 409 } });
    const order = { type: "OrderRequestClaimed", data: { orderId: 5, fingerprint: "a", claimedAt: at } };
    given([order as unknown as ClaimEvent])
      .when({ type: "Claim", id: 6, fingerprint: "a", at })
      .thenEmits([]);
    // Ordering's first claims had no time: they never lapse.
    const timeless = { type: "OrderRequestClaimed", data: { orderId: 5, fingerprint: "a" } };
    given([timeless as unknown as ClaimEvent])
      .when({ type: "Claim", id: 6, fingerprint: "b", at: "2036-01-01T00:00:00.000Z" })
      .thenRefuses({ body: { status: 409 } });
  });
});

describe("claimOnce on a real event store", () => {
  let dir: ReturnType<typeof tempDir>;
  let store: EventStore;
  let clock: ManualClock;
  let nextId: number;
  const options = (key: string | undefined, fingerprint = "f") => ({
    category: "thingrequest",
    idempotency: key === undefined ? undefined : { key, fingerprint },
    newId: async () => nextId++,
    creates: "thing",
  });
  /** The work under `id` is done: its stream has its first event. */
  const make = (id: number, what: string) =>
    store.append(`thing-${id}`, [{ type: "ThingMade", data: { what } }], { expectedRevision: "any" });
  const what = (event: RecordedEvent | undefined) => (event?.data as { what: string } | undefined)?.what;

  beforeEach(() => {
    dir = tempDir("claims");
    store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
    clock = new ManualClock("2026-11-22T10:00:00.000Z");
    nextId = 1;
  });
  afterEach(async () => {
    await store.close();
    dir.remove();
  });

  it("gives a request without a key a fresh id and records nothing", async () => {
    expect((await claimOnce({ store, clock }, options(undefined))).id).toBe(1);
    expect((await claimOnce({ store, clock }, options(undefined))).id).toBe(2);
  });

  it("answers a repeat with what the first request made, and a different body with 409", async () => {
    const first = await claimOnce({ store, clock }, options("k"));
    expect(first).toMatchObject({ id: 1 });
    expect(first.earlier).toBeUndefined();
    await make(first.id, "thing one");
    const repeat = await claimOnce({ store, clock }, options("k"));
    expect(repeat.id).toBe(1);
    expect(what(repeat.earlier)).toBe("thing one");
    await expect(claimOnce({ store, clock }, options("k", "other body"))).rejects.toMatchObject({
      body: { status: 409, message: KEY_REUSED },
    });
  });

  it("makes a repeat wait for the first request, and take over under its id when it never finishes", async () => {
    const first = await claimOnce({ store, clock }, options("slow"));
    let settled = false;
    let looks = 0;
    const looking: EventStore = {
      ...store,
      readStream: (stream, readOptions) => {
        if (stream === `thing-${first.id}`) looks++;
        return store.readStream(stream, readOptions);
      },
    };
    const repeat = claimOnce({ store: looking, clock }, options("slow")).finally(() => {
      settled = true;
    });
    await clock.advance(CLAIM_TAKEOVER_AFTER_MS - 1);
    // Two more looks: the repeat has seen the clock 1 ms short of the takeover time, and waits on.
    const seen = looks;
    await expect.poll(() => looks).toBeGreaterThanOrEqual(seen + 2);
    expect(settled, "a repeat waits until the takeover time").toBe(false);
    await clock.advance(1);
    const takenOver = await repeat;
    expect(takenOver.id).toBe(first.id);
    expect(takenOver.earlier).toBeUndefined();
  });

  it("lets a repeat that waits pick up the first request's result as soon as it exists", async () => {
    const first = await claimOnce({ store, clock }, options("quick"));
    const repeat = claimOnce({ store, clock }, options("quick"));
    await make(first.id, "made meanwhile");
    const answered = await repeat;
    expect(answered.id).toBe(first.id);
    expect(what(answered.earlier)).toBe("made meanwhile");
  });

  it("makes concurrent first requests of one key agree on one id", async () => {
    const claims = await Promise.all(
      Array.from({ length: 8 }, () =>
        claimOnce({ store, clock }, options("race")).then(async (claim) => {
          if (!claim.earlier) await make(claim.id, `made ${claim.id}`);
          return claim.id;
        }),
      ),
    );
    expect(new Set(claims).size).toBe(1);
  });

  it("recovers what a racing request of the key made, or fails with the work's own error", async () => {
    const claim = await claimOnce({ store, clock }, options("recover"));
    const failure = unavailable("the catalogue is down");
    await expect(claim.failed(failure)).rejects.toBe(failure);
    await make(claim.id, "made by the other");
    expect(what(await claim.failed(failure))).toBe("made by the other");
  });

  it("answers a repeat with the refusal the first request met, at once, even when things changed since", async () => {
    const claim = await claimOnce({ store, clock }, options("refused"));
    const failure = conflict("already exists");
    await expect(claim.failed(failure)).rejects.toBe(failure);
    await make(claim.id, "would be made now");
    await expect(claimOnce({ store, clock }, options("refused"))).rejects.toMatchObject({
      body: { status: 409, type: "conflict", message: "already exists" },
    });
    await expect(claimOnce({ store, clock }, options("refused", "other body"))).rejects.toMatchObject({
      body: { status: 409, message: KEY_REUSED },
    });
  });

  it("records no refusal for a failure the client should retry (5xx): the repeat does the work", async () => {
    const claim = await claimOnce({ store, clock }, options("retry"));
    await expect(claim.failed(unavailable("down"))).rejects.toMatchObject({ body: { status: 503 } });
    await clock.advance(CLAIM_TAKEOVER_AFTER_MS);
    const repeat = await claimOnce({ store, clock }, options("retry"));
    expect(repeat.id).toBe(claim.id);
    expect(repeat.earlier).toBeUndefined();
  });
});
