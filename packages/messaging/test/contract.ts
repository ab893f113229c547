import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  BusUnavailableError,
  CheckedText,
  CheckedTexts,
  callRpc,
  callRpcPassing,
  checkedJson,
  consumeEvents,
  DEADLINE_HEADER,
  type DeliveredEvent,
  defineEvent,
  defineRpc,
  jsonCodec,
  KvBucketMissingError,
  KvConflictError,
  KvRecords,
  type MessageBus,
  NoRespondersError,
  publishEvent,
  RemoteError,
  RequestTimeoutError,
  serveRpc,
} from "../src/index.ts";

/** A backend under test; `connect` returns a new client (think: another process) on the same backend. */
export interface BusBackend {
  connect(name: string): Promise<MessageBus>;
  cleanup(): Promise<void>;
}

const uid = () => randomUUID().slice(0, 8);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);

/** Waits (polling) until `check` holds. */
const waitFor = (check: () => boolean, what: string) =>
  expect.poll(check, { message: `waiting for ${what}`, timeout: 5_000, interval: 10 }).toBe(true);

/** A promise the test resolves by hand, to hold a handler in flight. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

export function messageBusContract(name: string, factory: () => Promise<BusBackend>): void {
  describe(`MessageBus contract: ${name}`, () => {
    let backend: BusBackend;
    const clients: MessageBus[] = [];
    const releases: (() => void)[] = [];

    beforeAll(async () => {
      backend = await factory();
    });
    afterEach(async () => {
      for (const release of releases.splice(0)) release();
      await Promise.all(clients.splice(0).map((c) => c.close()));
    });
    afterAll(async () => {
      await backend?.cleanup();
    });

    async function client(label = "client"): Promise<MessageBus> {
      const bus = await backend.connect(`${label}-${uid()}`);
      clients.push(bus);
      return bus;
    }

    /** A gate that afterEach opens, so a failing test never leaves close() waiting forever. */
    function held() {
      const g = gate();
      releases.push(g.open);
      return g;
    }

    describe("request/reply", () => {
      it("round-trips payload and headers, handing the handler a copy", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.echo`;
        server.serve(subject, { queue: "svc" }, async (req) => {
          const payload = req.payload as { n: number; tags: string[] };
          const echo = structuredClone(payload);
          payload.tags.push("mutated by handler");
          return { echo, headers: req.headers, subject: req.subject };
        });
        await server.ping(); // the subscription has reached the backend
        const sent = { n: 1, tags: ["a"] };
        const reply = (await caller.request(subject, sent, {
          timeoutMs: 2_000,
          headers: { "x-request-id": "req-1", "x-correlation-id": "cor-1" },
        })) as { echo: unknown; headers: Record<string, string>; subject: string };
        expect(reply.echo).toEqual({ n: 1, tags: ["a"] });
        expect(reply.subject).toBe(subject);
        expect(reply.headers).toMatchObject({ "x-request-id": "req-1", "x-correlation-id": "cor-1" });
        expect(sent.tags).toEqual(["a"]);
      });

      it("turns a handler's RemoteError into the same RemoteError for the caller", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.fail`;
        const body = {
          status: 409,
          type: "conflict",
          message: "name taken",
          errors: [{ field: "name", message: "taken" }],
        };
        server.serve(subject, { queue: "svc" }, async () => {
          throw new RemoteError(body);
        });
        await server.ping();
        const error = await caller.request(subject, {}, { timeoutMs: 2_000 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RemoteError);
        expect((error as RemoteError).body).toEqual(body);
        expect((error as RemoteError).message).toBe("name taken");
      });

      it("answers an unexpected handler failure with a 500 that leaks nothing", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.crash`;
        server.serve(subject, { queue: "svc" }, async () => {
          throw new Error("db password is hunter2");
        });
        await server.ping();
        const error = await caller.request(subject, {}, { timeoutMs: 2_000 }).catch((e: unknown) => e);
        expect((error as RemoteError).body).toEqual({
          status: 500,
          type: "internal_error",
          message: "internal error",
        });
      });

      it("rejects with RequestTimeoutError at the deadline when the handler is too slow", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.slow`;
        const slow = held();
        server.serve(subject, { queue: "svc" }, () => slow.opened);
        await server.ping();
        const started = Date.now();
        const error = await caller.request(subject, {}, { timeoutMs: 300 }).catch((e: unknown) => e);
        const elapsed = Date.now() - started;
        expect(error).toBeInstanceOf(RequestTimeoutError);
        expect((error as RemoteError).body.status).toBe(503);
        expect(elapsed).toBeGreaterThanOrEqual(290);
        expect(elapsed).toBeLessThan(800);
      });

      it("does not handle a request that arrives after its caller's deadline; the caller times out", async () => {
        // As a request held in a client's buffer while NATS was down arrives: its caller has
        // already answered 503, so its work (placing an order) must not happen now.
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.late`;
        const handled: unknown[] = [];
        server.serve(subject, { queue: "svc" }, async (req) => {
          handled.push(req.payload);
          return "done";
        });
        await server.ping();
        const late = await caller
          .request(
            subject,
            { n: 1 },
            { timeoutMs: 300, headers: { [DEADLINE_HEADER]: String(Date.now() - 1) } },
          )
          .catch((e: unknown) => e);
        expect(late).toBeInstanceOf(RequestTimeoutError);
        // Barrier: a request in time, sent after, is handled; the late one never was.
        expect(await caller.request(subject, { n: 2 }, { timeoutMs: 2_000 })).toBe("done");
        expect(handled).toEqual([{ n: 2 }]);
      });

      it("rejects quickly with NoRespondersError when nobody serves the subject", async () => {
        const caller = await client("caller");
        const started = Date.now();
        const error = await caller
          .request(`test.${uid()}.nobody`, {}, { timeoutMs: 5_000 })
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(NoRespondersError);
        expect((error as RemoteError).body).toMatchObject({ status: 503, type: "service_unavailable" });
        expect(Date.now() - started).toBeLessThan(1_000);
      });

      it("shares requests within a queue group: each answered once, every replica busy", async () => {
        const [a, b, caller] = [await client("a"), await client("b"), await client("caller")];
        const subject = `test.${uid()}.shared`;
        const answered = { a: 0, b: 0 };
        a.serve(subject, { queue: "svc" }, async () => {
          answered.a++;
          return "a";
        });
        b.serve(subject, { queue: "svc" }, async () => {
          answered.b++;
          return "b";
        });
        await Promise.all([a.ping(), b.ping()]);
        const replies = await Promise.all(
          Array.from({ length: 30 }, () => caller.request(subject, null, { timeoutMs: 2_000 })),
        );
        expect(replies).toHaveLength(30);
        expect(answered.a + answered.b).toBe(30);
        expect(answered.a).toBeGreaterThan(0);
        expect(answered.b).toBeGreaterThan(0);
      });
    });

    describe("integration events", () => {
      function collect(bus: MessageBus, durable: string, subjects: string[], into: DeliveredEvent[]) {
        return bus.consume({
          durable,
          subjects,
          handler: async (event) => {
            into.push(event);
          },
        });
      }

      it("delivers events published before the consumer started, in order, with headers", async () => {
        const [publisher, consumer] = [await client("pub"), await client("sub")];
        const subject = `events.test${uid()}.thing.happened`;
        const ids = Array.from({ length: 5 }, (_, i) => `e${i}-${uid()}`);
        for (const [i, id] of ids.entries()) {
          await publisher.publish({ id, subject, payload: { i }, headers: { "x-request-id": `r${i}` } });
        }
        const got: DeliveredEvent[] = [];
        collect(consumer, `d-${uid()}`, [subject], got);
        await waitFor(() => got.length === 5, "5 events");
        const later = Array.from({ length: 5 }, (_, i) => `l${i}-${uid()}`);
        for (const [i, id] of later.entries())
          await publisher.publish({ id, subject, payload: { i: i + 5 } });
        await waitFor(() => got.length === 10, "10 events");
        expect(got.map((e) => e.id)).toEqual([...ids, ...later]);
        expect(got[0]).toMatchObject({ subject, payload: { i: 0 }, deliveryCount: 1 });
        expect(got[0]!.headers).toEqual({ "x-request-id": "r0" });
        expect(got.map((e) => (e.payload as { i: number }).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      });

      it("stores an event id once: publishing it again is not delivered again", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const [dup, next] = [`dup-${uid()}`, `next-${uid()}`];
        await bus.publish({ id: dup, subject, payload: 1 });
        await bus.publish({ id: dup, subject, payload: 2 });
        await bus.publish({ id: next, subject, payload: 3 });
        const got: DeliveredEvent[] = [];
        collect(bus, `d-${uid()}`, [subject], got);
        await waitFor(() => got.some((e) => e.id === next), "the event after the duplicate");
        expect(got.map((e) => [e.id, e.payload])).toEqual([
          [dup, 1],
          [next, 3],
        ]);
      });

      it("starts a durable created with startAt new at the events published once it is ready, and keeps its place after", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const durable = `new-${uid()}`;
        await bus.publish({ id: `before-${uid()}`, subject, payload: "before" });
        const got: DeliveredEvent[] = [];
        const handler = async (event: DeliveredEvent) => void got.push(event);
        const first = bus.consume({ durable, subjects: [subject], startAt: "new", handler });
        await first.ready();
        await bus.publish({ id: `after-${uid()}`, subject, payload: "after" });
        await waitFor(() => got.length === 1, "the event published once it was ready");
        await first.close();
        // Published while nobody consumes: the durable holds it, "new" does not start it again.
        await bus.publish({ id: `while-${uid()}`, subject, payload: "while closed" });
        const second = bus.consume({ durable, subjects: [subject], startAt: "new", handler });
        await second.ready();
        await bus.publish({ id: `last-${uid()}`, subject, payload: "last" });
        await waitFor(() => got.length === 3, "the events published since");
        expect(got.map((e) => e.payload)).toEqual(["after", "while closed", "last"]);
      });

      it("makes one durable of two clients creating it with startAt new at once: an event reaches one of them, once", async () => {
        const [a, b] = [await client("a"), await client("b")];
        const subject = `events.test${uid()}.thing.happened`;
        const durable = `raced-${uid()}`;
        const got: string[] = [];
        const consumers = [a, b].map((bus, i) =>
          bus.consume({
            durable,
            subjects: [subject],
            startAt: "new",
            handler: async (event) => void got.push(`${i}:${event.payload}`),
          }),
        );
        await Promise.all(consumers.map((consumer) => consumer.ready()));
        const [first, last] = [`first-${uid()}`, `last-${uid()}`];
        await a.publish({ id: first, subject, payload: "first" });
        await a.publish({ id: last, subject, payload: "last" });
        await waitFor(() => got.length >= 2, "both events");
        expect(got.map((entry) => entry.split(":")[1]).sort()).toEqual(["first", "last"]);
      });

      it("starts a durable replacing another at its first unacknowledged event; deleteDurable removes the old one", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const old = `old-${uid()}`;
        const stuck = held();
        const handledByOld: unknown[] = [];
        const oldConsumer = bus.consume({
          durable: old,
          subjects: [subject],
          handler: async (event) => {
            handledByOld.push(event.payload);
            if (event.payload === 3) await stuck.opened;
          },
        });
        for (const n of [1, 2, 3, 4]) await bus.publish({ id: `${n}-${uid()}`, subject, payload: n });
        await waitFor(() => handledByOld.includes(3), "the old durable at its third event");
        const got: unknown[] = [];
        const replacement = bus.consume({
          durable: `replacement-${uid()}`,
          subjects: [subject],
          startAt: { after: old },
          handler: async (event) => void got.push(event.payload),
        });
        await replacement.ready();
        await bus.publish({ id: `5-${uid()}`, subject, payload: 5 });
        await waitFor(() => got.length === 3, "the events from the old durable's first unacknowledged on");
        expect(got).toEqual([3, 4, 5]);
        stuck.open();
        await oldConsumer.close();
        expect(await bus.deleteDurable(old)).toBe(true);
        expect(await bus.deleteDurable(old)).toBe(false);
      });

      it("refuses to publish outside events.>, where nothing would store it", async () => {
        const bus = await client();
        await expect(bus.publish({ id: uid(), subject: `test.${uid()}.lost`, payload: 1 })).rejects.toThrow(
          /no stream/,
        );
      });

      it("filters by subject with wildcards", async () => {
        const bus = await client();
        const area = `test${uid()}`;
        await bus.publish({ id: uid(), subject: `events.${area}.order.placed`, payload: 1 });
        await bus.publish({ id: uid(), subject: `events.${area}.cheese.added`, payload: 2 });
        await bus.publish({ id: uid(), subject: `events.${area}.order.cancelled`, payload: 3 });
        const got: DeliveredEvent[] = [];
        collect(bus, `d-${uid()}`, [`events.${area}.order.>`], got);
        // In stream order: a cheese.added let through would come before the second order event.
        await waitFor(() => got.length === 2, "2 order events");
        expect(got.map((e) => e.payload)).toEqual([1, 3]);
      });

      it("shares a durable between clients: every event handled exactly once", async () => {
        const [publisher, a, b] = [await client("pub"), await client("a"), await client("b")];
        const subject = `events.test${uid()}.thing.happened`;
        const durable = `shared-${uid()}`;
        const handledBy: Record<string, string[]> = {};
        for (const [label, bus] of [
          ["a", a],
          ["b", b],
        ] as const) {
          bus.consume({
            durable,
            subjects: [subject],
            handler: async (event) => {
              handledBy[event.id] = [...(handledBy[event.id] ?? []), label];
              await sleep(5); // let the other client take the next one
            },
          });
        }
        const ids = Array.from({ length: 20 }, () => uid());
        for (const id of ids) await publisher.publish({ id, subject, payload: null });
        // One more event after them: once it is handled, a second delivery of any of them to the
        // other client (it would come in stream order) has had its turn.
        const last = uid();
        await publisher.publish({ id: last, subject, payload: null });
        await waitFor(() => handledBy[last] !== undefined, "the event after them");
        delete handledBy[last];
        expect(Object.keys(handledBy).sort()).toEqual([...ids].sort());
        expect(Object.values(handledBy).every((by) => by.length === 1)).toBe(true);
        const labels = Object.values(handledBy).flat();
        expect(labels).toContain("a");
        expect(labels).toContain("b");
      });

      it("redelivers a rejected event (deliveryCount 2) before later events", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const [first, second] = [`first-${uid()}`, `second-${uid()}`];
        const seen: [string, number][] = [];
        bus.consume({
          durable: `d-${uid()}`,
          subjects: [subject],
          handler: async (event) => {
            seen.push([event.id, event.deliveryCount]);
            if (event.id === first && event.deliveryCount === 1) throw new Error("transient");
          },
        });
        await bus.publish({ id: first, subject, payload: null });
        await bus.publish({ id: second, subject, payload: null });
        await waitFor(() => seen.length === 3, "3 deliveries");
        expect(seen).toEqual([
          [first, 1],
          [first, 2],
          [second, 1],
        ]);
      });

      it("with maxInFlight, hands out that many events at once, in publish order, each handled once", async () => {
        const [publisher, a, b] = [await client("pub"), await client("a"), await client("b")];
        const subject = `events.test${uid()}.thing.happened`;
        const durable = `window-${uid()}`;
        const release = held();
        const inHand: string[] = [];
        const handled: string[] = [];
        let most = 0;
        for (const bus of [a, b]) {
          bus.consume({
            durable,
            subjects: [subject],
            maxInFlight: 3,
            handler: async (event) => {
              inHand.push(event.id);
              most = Math.max(most, inHand.length);
              await release.opened;
              inHand.splice(inHand.indexOf(event.id), 1);
              handled.push(event.id);
            },
          });
        }
        const ids = Array.from({ length: 7 }, (_, i) => `w${i}-${uid()}`);
        for (const id of ids) await publisher.publish({ id, subject, payload: null });
        await waitFor(() => inHand.length === 3, "3 events in hand at once");
        expect([...inHand].sort()).toEqual(ids.slice(0, 3).sort());
        release.open();
        await waitFor(() => handled.length === ids.length, "every event handled");
        expect([...handled].sort()).toEqual([...ids].sort());
        expect(most).toBe(3); // across both clients, never more than the durable's window
      });

      it("says when each event was published: in publish order, the same on a redelivery", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const ids = Array.from({ length: 3 }, (_, i) => `p${i}-${uid()}`);
        const seen: DeliveredEvent[] = [];
        const before = Date.now();
        for (const id of ids) await bus.publish({ id, subject, payload: null });
        const after = Date.now();
        bus.consume({
          durable: `d-${uid()}`,
          subjects: [subject],
          handler: async (event) => {
            seen.push(event);
            if (event.id === ids[0] && event.deliveryCount === 1) throw new Error("transient");
          },
        });
        await waitFor(() => seen.length === 4, "4 deliveries");
        const first = seen.filter((e) => e.id === ids[0]).map((e) => e.publishedAt);
        expect(first).toHaveLength(2);
        expect(first[1]).toBe(first[0]);
        const times = ids.map((id) => seen.find((e) => e.id === id)!.publishedAt);
        expect([...times].sort()).toEqual(times);
        for (const time of times) {
          expect(Date.parse(time)).toBeGreaterThanOrEqual(before - 1);
          expect(Date.parse(time)).toBeLessThanOrEqual(after + 1);
        }
      });

      it("retries a failing handler, backing off up to maxRedeliveryDelayMs, for as long as it fails, and handles it once it recovers", async () => {
        // A dependency down for "3 minutes", scaled down: 2 s of failures with a 100 ms cap on the
        // backoff is 20-odd deliveries, where 10 used to drop the event for good.
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const [flaky, next] = [`flaky-${uid()}`, `next-${uid()}`];
        const deliveries: number[] = [];
        const handled: string[] = [];
        let recoversAt = 0;
        const durable = `d-${uid()}`;
        bus.consume({
          durable,
          subjects: [subject],
          maxRedeliveryDelayMs: 100,
          deadLetterAfterMs: 60_000,
          handler: async (event) => {
            if (event.id === flaky) {
              deliveries.push(event.deliveryCount);
              recoversAt ||= Date.now() + 2_000;
              if (Date.now() < recoversAt) throw new Error("event store unavailable");
            }
            handled.push(event.id);
          },
        });
        await bus.publish({ id: flaky, subject, payload: null });
        await bus.publish({ id: next, subject, payload: null });
        await expect.poll(() => handled, { timeout: 10_000, interval: 20 }).toEqual([flaky, next]);
        expect(deliveries.length).toBeGreaterThan(10);
        expect(deliveries).toEqual(deliveries.map((_, i) => i + 1));
        expect((await bus.deadLetters().list({ durable, limit: 10 })).items).toEqual([]);
      });

      it("keeps a handler running past ackWaitMs on its event: not delivered again meanwhile", async () => {
        const bus = await client();
        const subject = `events.test${uid()}.thing.happened`;
        const [slow, next] = [`slow-${uid()}`, `next-${uid()}`];
        const seen: [string, number][] = [];
        bus.consume({
          durable: `d-${uid()}`,
          subjects: [subject],
          ackWaitMs: 300,
          handler: async (event) => {
            seen.push([event.id, event.deliveryCount]);
            // Part of the handler, not a wait before an assertion: it outlives its ack wait 4 times.
            if (event.id === slow) await sleep(1_200);
          },
        });
        await bus.publish({ id: slow, subject, payload: null });
        await bus.publish({ id: next, subject, payload: null });
        // One event in flight: the next comes once the slow one is acked, and a redelivery of the
        // slow one (its ack wait run out) would have come before it.
        await expect.poll(() => seen.some(([id]) => id === next), { timeout: 5_000 }).toBe(true);
        expect(seen).toEqual([
          [slow, 1],
          [next, 1],
        ]);
      });

      it("dead-letters an event still failing deadLetterAfterMs after its first failure, goes on, and replays it to that consumer alone", async () => {
        const [publisher, bus] = [await client("pub"), await client("sub")];
        const subject = `events.test${uid()}.thing.happened`;
        const [poisonA, poisonB, next] = [`pa-${uid()}`, `pb-${uid()}`, `next-${uid()}`];
        const [failing, healthy] = [`failing-${uid()}`, `healthy-${uid()}`];
        let broken = true;
        const handled: Record<string, string[]> = { [failing]: [], [healthy]: [] };
        for (const durable of [failing, healthy]) {
          bus.consume({
            durable,
            subjects: [subject],
            maxRedeliveryDelayMs: 100,
            deadLetterAfterMs: 500,
            handler: async (event) => {
              if (durable === failing && broken && event.id !== next) throw new Error("customer store down");
              handled[durable]!.push(event.id);
            },
          });
        }
        await publisher.publish({
          id: poisonA,
          subject,
          payload: { n: 1 },
          headers: { "x-request-id": "r1" },
        });
        await publisher.publish({ id: poisonB, subject, payload: { n: 2 } });
        await publisher.publish({ id: next, subject, payload: { n: 3 } });
        await expect.poll(() => handled[failing], { timeout: 10_000, interval: 20 }).toEqual([next]);

        const letters = bus.deadLetters();
        const first = await letters.list({ durable: failing, limit: 1 });
        expect(first.items).toHaveLength(1);
        expect(first.next).toBeDefined();
        const second = await letters.list({ durable: failing, limit: 1, after: first.next });
        expect(second.next).toBeUndefined();
        const [a, b] = [first.items[0]!, second.items[0]!];
        expect(a).toMatchObject({
          durable: failing,
          error: "Error: customer store down",
          event: { id: poisonA, subject, payload: { n: 1 }, headers: { "x-request-id": "r1" } },
        });
        expect(a.deliveries).toBeGreaterThan(1);
        expect(Date.parse(a.deadLetteredAt) - Date.parse(a.firstFailedAt)).toBeGreaterThanOrEqual(500);
        expect(b.event.id).toBe(poisonB);
        expect(await letters.get(a.id)).toEqual(a);
        expect((await letters.list({ durable: healthy, limit: 10 })).items).toEqual([]);

        broken = false;
        expect(await letters.replay(a.id)).toBe(true);
        expect(await letters.delete(b.id)).toBe(true);
        await expect.poll(() => handled[failing], { timeout: 5_000, interval: 20 }).toEqual([next, poisonA]);
        expect(await letters.replay(a.id)).toBe(false);
        expect(await letters.delete(b.id)).toBe(false);
        expect(await letters.get(b.id)).toBeUndefined();
        expect((await letters.list({ durable: failing, limit: 10 })).items).toEqual([]);
        // Another event through the failing durable: the replayed one was acked, nothing else came.
        const later = `later-${uid()}`;
        await publisher.publish({ id: later, subject, payload: null });
        await expect
          .poll(() => handled[failing], { timeout: 5_000, interval: 20 })
          .toEqual([next, poisonA, later]);
        // The healthy durable takes each event in its own time: it need not have had `later` yet.
        await expect
          .poll(() => handled[healthy], { timeout: 5_000, interval: 20 })
          .toEqual([poisonA, poisonB, next, later]);
      });

      it("closing a consumer waits for its in-flight handler, whose ack then counts", async () => {
        const [publisher, consumer] = [await client("pub"), await client("sub")];
        const subject = `events.test${uid()}.thing.happened`;
        const durable = `d-${uid()}`;
        const slow = held();
        const seen: string[] = [];
        const subscription = consumer.consume({
          durable,
          subjects: [subject],
          handler: async (event) => {
            seen.push(event.id);
            await slow.opened;
          },
        });
        const [first, second] = [`first-${uid()}`, `second-${uid()}`];
        await publisher.publish({ id: first, subject, payload: null });
        await waitFor(() => seen.length === 1, "the first event");
        let closed = false;
        const closing = subscription.close().then(() => {
          closed = true;
        });
        // Not a wait for something to happen: a window in which close must NOT finish (a negative
        // cannot be observed without one). Too short a window lets a bug pass, never a correct close fail.
        await sleep(150);
        expect(closed).toBe(false);
        slow.open();
        await closing;
        const after: DeliveredEvent[] = [];
        collect(await client("again"), durable, [subject], after);
        await publisher.publish({ id: second, subject, payload: null });
        // Had the first event's ack not counted, it would be redelivered before the second.
        await waitFor(() => after.some((e) => e.id === second), "the second event");
        expect(after.map((e) => e.id)).toEqual([second]);
      });
    });

    describe("broadcast", () => {
      it("reaches every matching subscriber, across clients, and not others", async () => {
        const [sender, x, y] = [await client("sender"), await client("x"), await client("y")];
        const topic = `broadcast.test${uid()}`;
        const got: string[] = [];
        x.onBroadcast(`${topic}.revoked`, (p) => got.push(`x:${JSON.stringify(p)}`));
        y.onBroadcast(`${topic}.*`, (p) => got.push(`y:${JSON.stringify(p)}`));
        sender.onBroadcast(`${topic}.revoked`, (p) => got.push(`self:${JSON.stringify(p)}`));
        x.onBroadcast(`${topic}.other`, (p) => got.push(`other:${JSON.stringify(p)}`));
        await Promise.all([x.ping(), y.ping(), sender.ping()]);
        await sender.broadcast(`${topic}.revoked`, { session: "s1" });
        // Then one to `.other`: each client gets its broadcasts in order, so once x and y have it,
        // anything the first one would still bring has come.
        await sender.broadcast(`${topic}.other`, { done: true });
        await waitFor(
          () => got.includes('other:{"done":true}') && got.includes('y:{"done":true}'),
          "the second broadcast",
        );
        expect(got.filter((g) => g.endsWith('{"session":"s1"}')).sort()).toEqual([
          'self:{"session":"s1"}',
          'x:{"session":"s1"}',
          'y:{"session":"s1"}',
        ]);
      });

      it("stops delivering once the subscription is closed", async () => {
        const [sender, listener] = [await client("sender"), await client("listener")];
        const subject = `broadcast.test${uid()}`;
        const got: unknown[] = [];
        const sub = listener.onBroadcast(subject, (p) => got.push(p));
        await listener.ping();
        await sender.broadcast(subject, 1);
        await waitFor(() => got.length === 1, "first broadcast");
        await sub.close();
        // Another subscription of the same client to the same subject: when it has the second
        // broadcast, the closed one would have had it too.
        const witness: unknown[] = [];
        listener.onBroadcast(subject, (p) => witness.push(p));
        await listener.ping();
        await sender.broadcast(subject, 2);
        await waitFor(() => witness.includes(2), "the second broadcast");
        expect(got).toEqual([1]);
      });
    });

    describe("notice channels", () => {
      /** A follower on its own client, recording what it is told. */
      async function follower(channel: string) {
        const told: string[] = [];
        const follow = (await client("follower")).follow(channel, {
          onNotice: (payload) => told.push(JSON.stringify(payload)),
          onReset: () => told.push("reset"),
        });
        // Following once a barrier can answer (its consumer is up, its reset told).
        await expect.poll(() => follow.barrier(), { timeout: 5_000, interval: 20 }).toBe(true);
        return { told, follow };
      }

      it("has a barrier taken after an announce resolved cover it, at every follower, in order", async () => {
        const channel = `test_${uid()}`;
        const announcer = await client("announcer");
        const [x, y] = [await follower(channel), await follower(channel)];
        for (let n = 1; n <= 20; n++) {
          await announcer.announce(channel, { n });
          // No wait for the notice: the barrier alone must make it be there.
          expect(await x.follow.barrier()).toBe(true);
          expect(x.told.at(-1)).toBe(JSON.stringify({ n }));
          expect(await y.follow.barrier()).toBe(true);
          expect(y.told.at(-1)).toBe(JSON.stringify({ n }));
        }
        const expected = ["reset", ...Array.from({ length: 20 }, (_, i) => JSON.stringify({ n: i + 1 }))];
        expect(x.told).toEqual(expected);
        expect(y.told).toEqual(expected);
      });

      it("has a follower that says it is current after an announce resolved have it, asking no one", async () => {
        const channel = `test_${uid()}`;
        const announcer = await client("announcer");
        const [x, y] = [await follower(channel), await follower(channel)];
        // NATS: once each holds its read lease (its first grant applied).
        await expect
          .poll(() => x.follow.current() && y.follow.current(), { timeout: 5_000, interval: 20 })
          .toBe(true);
        for (let n = 1; n <= 20; n++) {
          await announcer.announce(channel, { n });
          for (const one of [x, y]) {
            expect(one.follow.current()).toBe(true);
            expect(one.told.at(-1)).toBe(JSON.stringify({ n }));
          }
        }
        await x.follow.close();
        expect(x.follow.current()).toBe(false);
      });

      it("follows from the channel's end: what was announced before is not handed over", async () => {
        const channel = `test_${uid()}`;
        const announcer = await client("announcer");
        await announcer.announce(channel, "before");
        const x = await follower(channel);
        await announcer.announce(channel, "after");
        expect(await x.follow.barrier()).toBe(true);
        expect(x.told).toEqual(["reset", '"after"']);
      });

      it("stops once closed: no notice, and a barrier answers false", async () => {
        const channel = `test_${uid()}`;
        const announcer = await client("announcer");
        const [x, witness] = [await follower(channel), await follower(channel)];
        await x.follow.close();
        await announcer.announce(channel, 1);
        expect(await witness.follow.barrier()).toBe(true);
        expect(witness.told).toEqual(["reset", "1"]);
        expect(x.told).toEqual(["reset"]);
        expect(await x.follow.barrier()).toBe(false);
      });

      it("refuses a channel name that is not a plain token", async () => {
        const bus = await client();
        await expect(bus.announce("a.b", 1)).rejects.toThrow(/invalid notice channel/);
        expect(() => bus.follow("a b", { onNotice: () => {}, onReset: () => {} })).toThrow(
          /invalid notice channel/,
        );
      });
    });

    describe("key-value", () => {
      it("gets, puts, creates only once, deletes", async () => {
        const kv = await (await client()).kv(`b-${uid()}`);
        expect(await kv.get("k1")).toBeUndefined();
        const r1 = await kv.put("k1", bytes("v1"));
        const entry = await kv.get("k1");
        expect(text(entry?.value)).toBe("v1");
        expect(entry?.revision).toBe(r1);
        await expect(kv.create("k1", bytes("again"))).rejects.toBeInstanceOf(KvConflictError);
        const r2 = await kv.create("k2", bytes("v2"));
        expect(r2).toBeGreaterThan(r1);
        await kv.delete("k1");
        expect(await kv.get("k1")).toBeUndefined();
        await kv.create("k1", bytes("reborn"));
        expect(text((await kv.get("k1"))?.value)).toBe("reborn");
      });

      it("opens another service's bucket read only once it exists, and never makes it", async () => {
        const bucket = `b-${uid()}`;
        await expect((await client("reader")).kv(bucket, { readOnly: true })).rejects.toBeInstanceOf(
          KvBucketMissingError,
        );
        await (await (await client("owner")).kv(bucket)).put("k", bytes("v"));
        const read = await (await client("reader")).kv(bucket, { readOnly: true });
        expect(text((await read.get("k"))?.value)).toBe("v");
      });

      it("deleteMatching deletes the keys under a prefix, and only those", async () => {
        const bucket = `b-${uid()}`;
        const [kv, other] = [await (await client("a")).kv(bucket), await (await client("b")).kv(bucket)];
        await kv.put("cust-1.a", bytes("1a"));
        await kv.put("cust-1.b", bytes("1b"));
        await kv.put("cust-12.a", bytes("12a"));
        await kv.put("cust-1.gone", bytes("x"));
        await kv.delete("cust-1.gone");
        expect(await other.deleteMatching("cust-1.*")).toBe(2);
        expect(await kv.get("cust-1.a")).toBeUndefined();
        expect(await kv.get("cust-1.b")).toBeUndefined();
        expect(text((await kv.get("cust-12.a"))?.value)).toBe("12a");
        expect(await kv.deleteMatching("cust-1.*")).toBe(0);
        await kv.create("cust-1.a", bytes("again"));
        expect(text((await kv.get("cust-1.a"))?.value)).toBe("again");
      });

      it("update is compare-and-set: of two updates from one revision exactly one wins", async () => {
        const bucket = `b-${uid()}`;
        const [kvA, kvB] = [await (await client("a")).kv(bucket), await (await client("b")).kv(bucket)];
        const revision = await kvA.put("counter", bytes("0"));
        const results = await Promise.allSettled([
          kvA.update("counter", bytes("a"), revision),
          kvB.update("counter", bytes("b"), revision),
        ]);
        const won = results.filter((r) => r.status === "fulfilled");
        const lost = results.filter((r) => r.status === "rejected");
        expect(won).toHaveLength(1);
        expect(lost).toHaveLength(1);
        expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(KvConflictError);
        const winner = results[0]!.status === "fulfilled" ? "a" : "b";
        const current = await kvB.get("counter");
        expect(text(current?.value)).toBe(winner);
        expect(current?.revision).toBe((won[0] as PromiseFulfilledResult<number>).value);
        await expect(kvA.update("counter", bytes("stale"), revision)).rejects.toBeInstanceOf(KvConflictError);
      });

      it("watch reports later puts and deletes of matching keys until closed", async () => {
        const bucket = `b-${uid()}`;
        const [watcherBus, writerBus] = [await client("watcher"), await client("writer")];
        const kv = await watcherBus.kv(bucket);
        const writer = await writerBus.kv(bucket);
        await writer.put("user.0", bytes("before the watch"));
        await sleep(5); // NATS tells earlier from later by millisecond timestamps
        const changes: { key: string; value?: string; deleted?: true }[] = [];
        const watch = kv.watch("user.*", (c) =>
          changes.push("deleted" in c ? { key: c.key, deleted: true } : { key: c.key, value: text(c.value) }),
        );
        // A remote watcher starts asynchronously: write a probe key until it shows up.
        const probed = () => changes.some((c) => c.key === "user.probe");
        await expect
          .poll(
            async () => {
              await writer.put("user.probe", bytes("probe"));
              return probed();
            },
            { interval: 20 },
          )
          .toBe(true);
        const seen = () => changes.filter((c) => c.key !== "user.probe");
        await writer.put("user.1", bytes("one"));
        await writer.put("other.1", bytes("not watched"));
        await writer.delete("user.1");
        await waitFor(() => seen().length === 2, "2 changes");
        expect(seen()).toEqual([
          { key: "user.1", value: "one" },
          { key: "user.1", deleted: true },
        ]);
        await watch.close();
        // A second watch of the same client: when it reports user.2, the closed one would have.
        const witnessed: string[] = [];
        const witness = kv.watch("user.*", (c) => witnessed.push(c.key));
        await expect
          .poll(
            async () => {
              await writer.put("user.probe2", bytes("probe"));
              return witnessed.includes("user.probe2");
            },
            { interval: 20 },
          )
          .toBe(true);
        await writer.put("user.2", bytes("after close"));
        await waitFor(() => witnessed.includes("user.2"), "user.2 at the second watch");
        await witness.close();
        expect(seen().filter((c) => c.key !== "user.probe2")).toHaveLength(2);
      });

      describe("KvRecords (the one way services use a bucket)", () => {
        type Tally = { count: number; by: string[] };
        const tallyCodec = jsonCodec<Tally>((parsed) =>
          parsed && typeof (parsed as Tally).count === "number" ? (parsed as Tally) : undefined,
        );

        it("round-trips values through the codec, and reads bytes it cannot decode as undefined", async () => {
          const bucket = `b-${uid()}`;
          const records = new KvRecords(await client("a"), bucket, tallyCodec);
          const revision = await records.put("t", { count: 2, by: ["a", "b"] });
          expect(await records.get("t")).toEqual({ key: "t", value: { count: 2, by: ["a", "b"] }, revision });
          expect(await records.get("absent")).toBeUndefined();
          // Another replica's records of the same bucket read what this one wrote.
          const other = new KvRecords(await client("b"), bucket, tallyCodec);
          expect((await other.get("t"))?.value).toEqual({ count: 2, by: ["a", "b"] });
          await (await (await client("c")).kv(bucket)).put("garbage", bytes("{not json"));
          expect(await other.get("garbage")).toMatchObject({ key: "garbage", value: undefined });
          await records.delete("t");
          expect(await other.get("t")).toBeUndefined();
        });

        it("creates a record once: of racing creates exactly one wins, the others learn they lost", async () => {
          const bucket = `b-${uid()}`;
          const replicas = await Promise.all(
            ["a", "b", "c", "d"].map(async (name) => new KvRecords(await client(name), bucket, tallyCodec)),
          );
          const results = await Promise.all(
            replicas.map((records, i) => records.create("once", { count: i, by: [String(i)] })),
          );
          const won = results.filter((revision) => revision !== undefined);
          expect(won).toHaveLength(1);
          const winner = results.findIndex((revision) => revision !== undefined);
          expect((await replicas[0]!.get("once"))?.value).toEqual({ count: winner, by: [String(winner)] });
          expect(await replicas[winner]!.create("once", { count: 9, by: [] })).toBeUndefined();
        });

        it("update reads again after losing a compare-and-set, so no concurrent change is lost", async () => {
          const bucket = `b-${uid()}`;
          const [a, b] = [
            new KvRecords(await client("a"), bucket, tallyCodec),
            new KvRecords(await client("b"), bucket, tallyCodec),
          ];
          const increment = (records: KvRecords<Tally>, who: string) =>
            records.update("tally", (current) => {
              const value = current?.value ?? { count: 0, by: [] };
              return { count: value.count + 1, by: [...value.by, who] };
            });
          await Promise.all(
            Array.from({ length: 10 }, (_, i) =>
              increment(i % 2 === 0 ? a : b, `${i % 2 === 0 ? "a" : "b"}${i}`),
            ),
          );
          const tally = (await b.get("tally"))?.value;
          expect(tally?.count).toBe(10);
          expect(new Set(tally?.by).size).toBe(10);
          // Deterministically: a change made from a record another writer has changed since is made again.
          const stale = await a.get("tally");
          await increment(b, "b-late");
          const counts: (number | undefined)[] = [];
          await a.update(
            "tally",
            (current) => {
              counts.push(current?.value?.count);
              return { count: (current?.value?.count ?? 0) + 1, by: [] };
            },
            stale,
          );
          expect(counts).toEqual([10, 11]);
          expect((await b.get("tally"))?.value?.count).toBe(12);
          // A change that leaves the record as it is writes nothing.
          const before = await a.get("tally");
          expect(await a.update("tally", () => undefined)).toBeUndefined();
          expect((await a.get("tally"))?.revision).toBe(before?.revision);
          // A stale revision given to compareAndSet loses, and says so.
          expect(await a.compareAndSet("tally", { count: 0, by: [] }, before!.revision - 1)).toBeUndefined();
        });

        it("keeps a forward-only value forward: a lagging writer never moves it back", async () => {
          const bucket = `b-${uid()}`;
          const position = jsonCodec<number>((parsed) => (typeof parsed === "number" ? parsed : undefined));
          const raise = (records: KvRecords<number>, to: number) =>
            records.update("checkpoint", (current) =>
              current?.value !== undefined && current.value >= to ? undefined : to,
            );
          const [ahead, behind] = [
            new KvRecords(await client("ahead"), bucket, position),
            new KvRecords(await client("behind"), bucket, position),
          ];
          await Promise.all([
            (async () => {
              for (const to of [100, 300, 500, 700]) await raise(ahead, to);
            })(),
            (async () => {
              for (const to of [0, 200, 400, 600, 50]) await raise(behind, to);
            })(),
          ]);
          expect((await behind.get("checkpoint"))?.value).toBe(700);
          expect(await raise(behind, 650)).toBeUndefined();
          expect((await ahead.get("checkpoint"))?.value).toBe(700);
        });

        it("watch hands over decoded values and deletions", async () => {
          const bucket = `b-${uid()}`;
          const [watcher, writer] = [
            new KvRecords(await client("watcher"), bucket, tallyCodec),
            new KvRecords(await client("writer"), bucket, tallyCodec),
          ];
          const seen: unknown[] = [];
          const watch = await watcher.watch("t.*", (change) => seen.push(change));
          await expect
            .poll(
              async () => {
                await writer.put("t.probe", { count: 0, by: [] });
                return seen.length > 0;
              },
              { interval: 20 },
            )
            .toBe(true);
          // Each state taken before the next is written: a bucket keeps one revision per key, so
          // a watcher lagging under load would be handed the deletion alone (port.ts).
          await writer.put("t.1", { count: 1, by: ["w"] });
          await waitFor(() => seen.some((c) => (c as { key: string }).key === "t.1"), "the value");
          await writer.delete("t.1");
          await waitFor(() => seen.some((c) => (c as { deleted?: true }).deleted), "the deletion");
          expect(seen.filter((c) => (c as { key: string }).key === "t.1")).toEqual([
            { key: "t.1", value: { count: 1, by: ["w"] } },
            { key: "t.1", deleted: true },
          ]);
          await watch.close();
        });
      });

      it("forgets entries older than ttlMs", async () => {
        const kv = await (await client()).kv(`b-${uid()}`, { ttlMs: 500 });
        await kv.put("session", bytes("s"));
        expect(text((await kv.get("session"))?.value)).toBe("s");
        await expect.poll(() => kv.get("session"), { timeout: 5_000, interval: 100 }).toBeUndefined();
        await kv.create("session", bytes("new")); // an expired key can be created again
      });
    });

    describe("lifecycle", () => {
      it("close() lets an in-flight request finish, then stops serving", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.slow`;
        const slow = held();
        let started = false;
        server.serve(subject, { queue: "svc" }, async () => {
          started = true;
          await slow.opened;
          return "done";
        });
        await server.ping();
        const reply = caller.request(subject, null, { timeoutMs: 5_000 });
        await waitFor(() => started, "the handler to start");
        let closed = false;
        const closing = server.close().then(() => {
          closed = true;
        });
        // Not a wait for something to happen: a window in which close must NOT finish (a negative
        // cannot be observed without one). Too short a window lets a bug pass, never a correct close fail.
        await sleep(150);
        expect(closed).toBe(false);
        slow.open();
        await closing;
        expect(await reply).toBe("done");
        expect(await server.ping()).toBe(false);
        await expect(caller.request(subject, null, { timeoutMs: 2_000 })).rejects.toBeInstanceOf(
          NoRespondersError,
        );
      });

      it("a request waiting for its reply when its bus closes fails at once, as one made after the close", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const subject = `test.${uid()}.held`;
        const hold = held();
        let started = false;
        server.serve(subject, { queue: "svc" }, async () => {
          started = true;
          await hold.opened;
          return "too late";
        });
        await server.ping();
        // A time-out far beyond the test's own: only the close can end this request in time.
        const failure = (request: Promise<unknown>) =>
          request.then(
            () => undefined,
            (e: unknown) => e as RemoteError,
          );
        const pending = failure(caller.request(subject, null, { timeoutMs: 600_000 }));
        await waitFor(() => started, "the handler to start");
        await caller.close();
        const waiting = await pending;
        const after = await failure(caller.request(subject, null, { timeoutMs: 600_000 }));
        expect(after).toBeInstanceOf(BusUnavailableError);
        expect(after?.body).toMatchObject({ status: 503, type: "service_unavailable" });
        expect(waiting).toBeInstanceOf(BusUnavailableError);
        expect(waiting?.body).toEqual(after?.body);
      });

      it("ping answers true while connected", async () => {
        expect(await (await client()).ping()).toBe(true);
      });
    });

    describe("typed RPC and events (rpc.ts)", () => {
      const createCheese = defineRpc({
        subject: `test.${uid()}.cheese.create`,
        request: z.object({ name: z.string().min(1), weightGrams: z.number().int().positive() }),
        response: z.object({ id: z.number().int() }),
      });

      it("answers typed replies; an invalid request is its server's 400 listing the issues, its handler never called", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const calls: unknown[] = [];
        serveRpc(server, createCheese, { queue: "svc" }, async (payload, ctx) => {
          calls.push({ payload, requestId: ctx.headers["x-request-id"], subject: ctx.subject });
          return { id: payload.weightGrams };
        });
        await server.ping();
        const reply = await callRpc(
          caller,
          createCheese,
          { name: "Brie", weightGrams: 250 },
          { timeoutMs: 2_000, headers: { "x-request-id": "r1" } },
        );
        expect(reply).toEqual({ id: 250 });
        expect(calls).toEqual([
          { payload: { name: "Brie", weightGrams: 250 }, requestId: "r1", subject: createCheese.subject },
        ]);

        const invalid = await callRpc(
          caller,
          createCheese,
          { name: "", weightGrams: -1 },
          { timeoutMs: 2_000 },
        )
          .then(() => undefined)
          .catch((e: unknown) => e as RemoteError);
        expect(invalid?.body).toMatchObject({ status: 400, type: "bad_request" });
        expect(invalid?.body.errors?.map((e) => e.field).sort()).toEqual(["name", "weightGrams"]);
        expect(calls).toHaveLength(1);
      });

      it("the server rejects an invalid payload with 400 listing the issues", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        let called = false;
        serveRpc(server, createCheese, { queue: "svc" }, async () => {
          called = true;
          return { id: 1 };
        });
        await server.ping();
        const error = await caller.request(createCheese.subject, { name: "Brie" }, { timeoutMs: 2_000 }).then(
          () => undefined,
          (e: unknown) => e as RemoteError,
        );
        expect(error?.body).toMatchObject({ status: 400, type: "bad_request" });
        expect(error?.body.errors).toEqual([{ field: "weightGrams", message: expect.any(String) }]);
        expect(called).toBe(false);
      });

      it("a reply is checked once, by its server: one breaking the schema is a 500 internal_error, one that passes is sent as checked", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        serveRpc(server, createCheese, { queue: "svc" }, async () => ({ id: "not a number" }) as never);
        await server.ping();
        const fromServer = await callRpc(
          caller,
          createCheese,
          { name: "Brie", weightGrams: 1 },
          { timeoutMs: 2_000 },
        )
          .then(() => undefined)
          .catch((e: unknown) => e as RemoteError);
        expect(fromServer?.body).toEqual({ status: 500, type: "internal_error", message: "internal error" });

        // What the caller gets is the schema's output, not the handler's result: a field the schema
        // does not know never leaves the server, and the caller has nothing left to check.
        const checked = defineRpc({ ...createCheese, subject: `test.${uid()}.checked` });
        serveRpc(server, checked, { queue: "svc" }, async () => ({ id: 7, internal: "secret" }) as never);
        await server.ping();
        expect(
          await callRpc(caller, checked, { name: "Brie", weightGrams: 1 }, { timeoutMs: 2_000 }),
        ).toEqual({
          id: 7,
        });
      });

      it("passes a reply's body through as the JSON its server checked, its meta beside it", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const getItem = defineRpc({
          subject: `test.${uid()}.item.get`,
          request: z.object({ id: z.number() }),
          response: z.object({ item, revision: z.number() }),
          passThrough: { body: "item", meta: ["revision"] },
        });
        const listItems = defineRpc({
          subject: `test.${uid()}.item.list`,
          request: z.object({}),
          response: z.object({ items: z.array(item), total: z.number() }),
          passThrough: { body: ".", meta: ["total"] },
        });
        const name = 'Brie "de Meaux" é\n🧀';
        serveRpc(server, getItem, { queue: "svc" }, async ({ id }) => ({
          item: { id, name, secret: "dropped" } as never,
          revision: 3,
        }));
        serveRpc(
          server,
          listItems,
          { queue: "svc" },
          async () =>
            ({
              items: [{ id: 1, name }],
              total: 1,
              secret: "dropped",
            }) as never,
        );
        await server.ping();
        const text = (body: string | Uint8Array) =>
          typeof body === "string" ? body : new TextDecoder().decode(body);

        const one = await callRpcPassing(caller, getItem, { id: 5 }, { timeoutMs: 2_000 });
        expect(one.meta).toEqual({ revision: 3 });
        expect(text(one.body)).toBe(JSON.stringify({ id: 5, name }));
        const page = await callRpcPassing(caller, listItems, {}, { timeoutMs: 2_000 });
        expect(page.meta).toEqual({ total: 1 });
        expect(text(page.body)).toBe(JSON.stringify({ items: [{ id: 1, name }], total: 1 }));
        // A caller reading the whole reply gets it joined back.
        expect(await callRpc(caller, getItem, { id: 5 }, { timeoutMs: 2_000 })).toEqual({
          item: { id: 5, name },
          revision: 3,
        });
        expect(await callRpc(caller, listItems, {}, { timeoutMs: 2_000 })).toEqual({
          items: [{ id: 1, name }],
          total: 1,
        });
        // A refusal is an error as ever, and a server not passing through still gives body and meta.
        const plain = defineRpc({ ...getItem, subject: `test.${uid()}.item.plain`, passThrough: undefined });
        serveRpc(server, plain, { queue: "svc" }, async ({ id }) => {
          if (id === 0) throw new RemoteError({ status: 404, type: "not_found", message: "no item 0" });
          return { item: { id, name }, revision: 4 };
        });
        await server.ping();
        const older = await callRpcPassing(
          caller,
          { ...plain, passThrough: getItem.passThrough },
          { id: 6 },
          {
            timeoutMs: 2_000,
          },
        );
        expect(older.meta).toEqual({ revision: 4 });
        expect(text(older.body)).toBe(JSON.stringify({ id: 6, name }));
        const refused = await callRpcPassing(
          caller,
          { ...plain, passThrough: getItem.passThrough },
          { id: 0 },
          {
            timeoutMs: 2_000,
          },
        ).catch((e: unknown) => e as RemoteError);
        expect(refused).toBeInstanceOf(RemoteError);
        expect((refused as RemoteError).body).toMatchObject({ status: 404, type: "not_found" });
      });

      it("passes a body through with the fields of it the caller reads (bodyMeta) beside its meta", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const addItem = defineRpc({
          subject: `test.${uid()}.item.add`,
          request: z.object({ name: z.string() }),
          response: z.object({ item, revision: z.number(), replayed: z.literal(true).optional() }),
          passThrough: { body: "item", meta: ["revision", "replayed"], bodyMeta: ["id"] },
        });
        serveRpc(server, addItem, { queue: "svc" }, async ({ name }) => ({
          item: { id: 7, name },
          revision: 0,
        }));
        const plain = defineRpc({
          ...addItem,
          subject: `test.${uid()}.item.add.plain`,
          passThrough: undefined,
        });
        serveRpc(server, plain, { queue: "svc" }, async ({ name }) => ({
          item: { id: 8, name },
          revision: 2,
          replayed: true as const,
        }));
        await server.ping();
        const text = (body: string | Uint8Array) =>
          typeof body === "string" ? body : new TextDecoder().decode(body);

        const added = await callRpcPassing(caller, addItem, { name: "Brie" }, { timeoutMs: 2_000 });
        expect(added.meta).toEqual({ revision: 0, id: 7 });
        expect(text(added.body)).toBe(JSON.stringify({ id: 7, name: "Brie" }));
        // A caller reading the whole reply gets it as the response schema has it, the id inside its item only.
        expect(await callRpc(caller, addItem, { name: "Brie" }, { timeoutMs: 2_000 })).toEqual({
          item: { id: 7, name: "Brie" },
          revision: 0,
        });
        // A server not passing through (a rolling update): the caller splits the reply itself.
        const older = await callRpcPassing(
          caller,
          { ...plain, passThrough: addItem.passThrough },
          { name: "Comté" },
          { timeoutMs: 2_000 },
        );
        expect(older.meta).toEqual({ revision: 2, replayed: true, id: 8 });
        expect(text(older.body)).toBe(JSON.stringify({ id: 8, name: "Comté" }));
      });

      it("answers replies of any size, past NATS's 1 MiB payload limit, whole and in order, plain or passed through", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const list = defineRpc({
          subject: `test.${uid()}.item.all`,
          request: z.object({ count: z.number() }),
          response: z.object({ items: z.array(item), total: z.number() }),
          passThrough: { body: ".", meta: ["total"] },
        });
        // Multi-byte characters, so a part boundary falls inside one of them.
        const items = (count: number) =>
          Array.from({ length: count }, (_, id) => ({ id, name: `Fromage ${id} é🧀 ${"x".repeat(400)}` }));
        serveRpc(server, list, { queue: "svc" }, async ({ count }) => {
          const all = items(count);
          return { items: new CheckedTexts(all.map((i) => checkedJson(item, i))), total: all.length };
        });
        const plain = `test.${uid()}.plain.big`;
        server.serve(plain, { queue: "svc" }, async () => ({ items: items(12_000) }));
        await server.ping();

        const big = await callRpcPassing(caller, list, { count: 20_000 }, { timeoutMs: 10_000 });
        const body = typeof big.body === "string" ? big.body : new TextDecoder().decode(big.body);
        expect(body.length).toBeGreaterThan(8 * 1_048_576);
        expect(big.meta).toEqual({ total: 20_000 });
        expect(JSON.parse(body)).toEqual({ items: items(20_000), total: 20_000 });
        const whole = (await caller.request(plain, {}, { timeoutMs: 10_000 })) as { items: unknown[] };
        expect(whole).toEqual({ items: items(12_000) });
        // A small reply is as ever, on the same connection, after the big ones.
        expect(await callRpc(caller, list, { count: 2 }, { timeoutMs: 2_000 })).toEqual({
          items: items(2),
          total: 2,
        });
      });

      it("joins a list's checked texts as they are, checks the rest of the reply, and refuses them elsewhere", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const listItems = defineRpc({
          subject: `test.${uid()}.checked.list`,
          request: z.object({ total: z.number() }),
          response: z.object({ items: z.array(item), next: z.string().nullable(), total: z.number().int() }),
          passThrough: { body: ".", meta: ["total"] },
        });
        const findItems = defineRpc({
          subject: `test.${uid()}.checked.find`,
          request: z.object({}),
          response: z.object({ items: z.array(item) }),
          passThrough: { body: "items", meta: [] },
        });
        const notPassed = defineRpc({
          ...findItems,
          subject: `test.${uid()}.checked.plain`,
          passThrough: undefined,
        });
        const name = 'Brie "de Meaux" é\n🧀';
        // Made once by the server: the schema's output (the unknown field dropped), encoded.
        const texts = [
          checkedJson(item, { id: 1, name, secret: "dropped" } as never),
          checkedJson(item, { id: 2, name: "Comté" }),
        ];
        expect(() => checkedJson(item, { id: "3" } as never)).toThrow(/broke its schema/);
        serveRpc(
          server,
          listItems,
          { queue: "svc" },
          async ({ total }) =>
            ({
              items: new CheckedTexts(texts),
              next: null,
              total,
              secret: "dropped",
            }) as never,
        );
        serveRpc(server, findItems, { queue: "svc" }, async () => ({ items: new CheckedTexts(texts) }));
        serveRpc(server, notPassed, { queue: "svc" }, async () => ({ items: new CheckedTexts(texts) }));
        await server.ping();
        const text = (body: string | Uint8Array) =>
          typeof body === "string" ? body : new TextDecoder().decode(body);
        const items = [
          { id: 1, name },
          { id: 2, name: "Comté" },
        ];

        const page = await callRpcPassing(caller, listItems, { total: 2 }, { timeoutMs: 2_000 });
        expect(page.meta).toEqual({ total: 2 });
        expect(text(page.body)).toBe(JSON.stringify({ items, next: null, total: 2 }));
        expect(await callRpc(caller, listItems, { total: 2 }, { timeoutMs: 2_000 })).toEqual({
          items,
          next: null,
          total: 2,
        });
        const found = await callRpcPassing(caller, findItems, {}, { timeoutMs: 2_000 });
        expect(text(found.body)).toBe(JSON.stringify(items));
        // The rest of the reply is still checked: a total breaking the schema is a 500.
        const broken = await callRpc(caller, listItems, { total: 1.5 }, { timeoutMs: 2_000 }).catch(
          (e: unknown) => e as RemoteError,
        );
        expect((broken as RemoteError).body).toEqual({
          status: 500,
          type: "internal_error",
          message: "internal error",
        });
        // Checked texts in a reply that is not passed through are a bug of the server: a 500.
        const plain = await callRpc(caller, notPassed, {}, { timeoutMs: 2_000 }).catch(
          (e: unknown) => e as RemoteError,
        );
        expect((plain as RemoteError).body).toMatchObject({ status: 500, type: "internal_error" });
      });

      it("sends a body's checked text as it is, checks the rest of the reply, and refuses it elsewhere", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const getItem = defineRpc({
          subject: `test.${uid()}.checked.get`,
          request: z.object({ revision: z.number() }),
          response: z.object({ item, revision: z.number().int() }),
          passThrough: { body: "item", meta: ["revision"] },
        });
        const wholeReply = defineRpc({
          ...getItem,
          subject: `test.${uid()}.checked.whole`,
          passThrough: { body: ".", meta: ["revision"] },
        });
        const notPassed = { ...getItem, subject: `test.${uid()}.checked.single`, passThrough: undefined };
        const name = 'Brie "de Meaux" é\n🧀';
        // Made once by the server: the schema's output (the unknown field dropped), encoded.
        const kept = new CheckedText(checkedJson(item, { id: 1, name, secret: "dropped" } as never));
        const reply = async ({ revision }: { revision: number }) => ({ item: kept, revision });
        serveRpc(server, getItem, { queue: "svc" }, reply);
        serveRpc(server, wholeReply, { queue: "svc" }, reply);
        serveRpc(server, notPassed, { queue: "svc" }, reply);
        await server.ping();
        const text = (body: string | Uint8Array) =>
          typeof body === "string" ? body : new TextDecoder().decode(body);

        const got = await callRpcPassing(caller, getItem, { revision: 3 }, { timeoutMs: 2_000 });
        expect(got.meta).toEqual({ revision: 3 });
        expect(text(got.body)).toBe(JSON.stringify({ id: 1, name }));
        expect(await callRpc(caller, getItem, { revision: 3 }, { timeoutMs: 2_000 })).toEqual({
          item: { id: 1, name },
          revision: 3,
        });
        // The rest of the reply is still checked: a revision breaking the schema is a 500.
        const failure = (call: Promise<unknown>) =>
          call.then(
            () => undefined,
            (e: unknown) => (e as RemoteError).body,
          );
        const internal = { status: 500, type: "internal_error", message: "internal error" };
        expect(await failure(callRpc(caller, getItem, { revision: 1.5 }, { timeoutMs: 2_000 }))).toEqual(
          internal,
        );
        // A checked text as the whole reply's field, or in a reply not passed through: a bug, a 500.
        expect(await failure(callRpc(caller, wholeReply, { revision: 3 }, { timeoutMs: 2_000 }))).toEqual(
          internal,
        );
        expect(await failure(callRpc(caller, notPassed, { revision: 3 }, { timeoutMs: 2_000 }))).toEqual(
          internal,
        );
      });

      it("passes a body's checked text through with the fields of it bodyMeta names, given beside it", async () => {
        const [server, caller] = [await client("server"), await client("caller")];
        const item = z.object({ id: z.number(), name: z.string() });
        const addItem = defineRpc({
          subject: `test.${uid()}.checked.add`,
          request: z.object({ fields: z.boolean() }),
          response: z.object({ item, revision: z.number() }),
          passThrough: { body: "item", meta: ["revision"], bodyMeta: ["id"] },
        });
        const kept = checkedJson(item, { id: 9, name: "Comté" });
        serveRpc(server, addItem, { queue: "svc" }, async ({ fields }) => ({
          item: fields ? new CheckedText(kept, { id: 9 }) : new CheckedText(kept),
          revision: 0,
        }));
        await server.ping();
        const added = await callRpcPassing(caller, addItem, { fields: true }, { timeoutMs: 2_000 });
        expect(added.meta).toEqual({ revision: 0, id: 9 });
        expect(typeof added.body === "string" ? added.body : new TextDecoder().decode(added.body)).toBe(kept);
        // Without the fields bodyMeta names, the caller could not read them: a bug, a 500.
        const refused = await callRpc(caller, addItem, { fields: false }, { timeoutMs: 2_000 }).catch(
          (e: unknown) => (e as RemoteError).body,
        );
        expect(refused).toMatchObject({ status: 500, type: "internal_error" });
      });

      it("publishes an event whose payload is a checked text as that text", async () => {
        const bus = await client();
        const added = defineEvent({
          subject: `events.test${uid()}.cheese.added`,
          schema: z.object({ cheese: z.object({ id: z.number(), name: z.string() }) }),
        });
        const name = 'Brie "de Meaux" é\n🧀';
        await bus.publish({
          id: uid(),
          subject: added.subject,
          payload: new CheckedText(`{"cheese":${JSON.stringify({ id: 1, name })}}`),
        });
        const received: unknown[] = [];
        consumeEvents(bus, {
          durable: `d-${uid()}`,
          events: [added],
          handler: async (event) => void received.push(event.payload),
          onInvalid: (event) => received.push({ invalid: event.payload }),
        });
        await waitFor(() => received.length === 1, "the event");
        expect(received).toEqual([{ cheese: { id: 1, name } }]);
      });

      it("publishes validated events and consumes them typed; invalid ones are acked and reported", async () => {
        const bus = await client();
        const area = `test${uid()}`;
        const added = defineEvent({
          subject: `events.${area}.cheese.added`,
          schema: z.object({ cheeseId: z.number(), name: z.string() }),
        });
        const removed = defineEvent({
          subject: `events.${area}.cheese.removed`,
          schema: z.object({ cheeseId: z.number() }),
        });
        await expect(
          publishEvent(bus, added, { id: uid(), payload: { cheeseId: "x" } as never }),
        ).rejects.toThrow(/cheeseId/);
        const bad = `bad-${uid()}`;
        await publishEvent(bus, added, { id: uid(), payload: { cheeseId: 1, name: "Brie" } });
        await bus.publish({ id: bad, subject: removed.subject, payload: { cheeseId: "oops" } }); // a drifted publisher
        await publishEvent(bus, removed, { id: uid(), payload: { cheeseId: 1 } });

        const handled: string[] = [];
        const invalid: { id: string; deliveryCount: number }[] = [];
        consumeEvents(bus, {
          durable: `d-${uid()}`,
          events: [added, removed],
          handler: async (event) => {
            if (event.subject === added.subject) handled.push(`added ${event.payload.name}`);
            else handled.push(`removed ${event.payload.cheeseId}`);
          },
          onInvalid: (event) => invalid.push({ id: event.id, deliveryCount: event.deliveryCount }),
        });
        // A rejected event is redelivered before later ones: had the invalid one not been acked,
        // its second delivery would have come before the last valid event.
        await waitFor(() => handled.length === 2, "2 valid events");
        expect(handled).toEqual(["added Brie", "removed 1"]);
        expect(invalid).toEqual([{ id: bad, deliveryCount: 1 }]);
      });

      it("acks the events the consumer does not want without handling them, and goes on", async () => {
        const bus = await client();
        const added = defineEvent({
          subject: `events.test${uid()}.cheese.added`,
          schema: z.object({ cheeseId: z.number() }),
        });
        const ids = [uid(), uid(), uid()];
        for (const [n, id] of ids.entries()) await publishEvent(bus, added, { id, payload: { cheeseId: n } });
        const asked: string[] = [];
        const handled: number[] = [];
        consumeEvents(bus, {
          durable: `d-${uid()}`,
          events: [added],
          wanted: async (event) => {
            asked.push(event.id);
            return event.id !== ids[1];
          },
          handler: async (event) => {
            handled.push(event.payload.cheeseId);
          },
          onInvalid: () => {},
        });
        await waitFor(() => handled.length === 2, "2 wanted events");
        expect(handled).toEqual([0, 2]);
        expect(asked).toEqual(ids); // the unwanted one was acked: asked once, never redelivered
      });

      it("with maxInFlight, acks an unwanted event too: it is not delivered again after the ack wait", async () => {
        const bus = await client();
        const added = defineEvent({
          subject: `events.test${uid()}.cheese.added`,
          schema: z.object({ cheeseId: z.number() }),
        });
        const ids = [uid(), uid(), uid()];
        for (const [n, id] of ids.entries()) await publishEvent(bus, added, { id, payload: { cheeseId: n } });
        const asked: string[] = [];
        const handled: number[] = [];
        consumeEvents(bus, {
          durable: `d-${uid()}`,
          events: [added],
          maxInFlight: 8,
          ackWaitMs: 300,
          wanted: async (event) => {
            asked.push(event.id);
            return event.id !== ids[1];
          },
          handler: async (event) => {
            handled.push(event.payload.cheeseId);
          },
          onInvalid: () => {},
        });
        await waitFor(() => handled.length === 2, "2 wanted events");
        // Not a wait for something to happen: twice the ack wait, in which an unacked event would
        // come again (a negative cannot be observed without a window).
        await sleep(600);
        expect(handled.sort()).toEqual([0, 2]);
        expect(asked.sort()).toEqual([...ids].sort());
      });
    });
  });
}
