import { ReadCache } from "@cheese/catalogue/read-cache";
import { type Cheese, type CheeseChangeNotice, catalogueRpc, cheeseChangeNotices } from "@cheese/contracts";
import { createInProcessBroker, type MessageBus, RemoteError, serveRpc } from "@cheese/messaging";
import { ManualClock } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { OPERATOR_KEY, testGateway } from "./support.ts";

/**
 * The gateway's read cache: a GET /cheeses/{id} is answered without asking the catalogue only
 * while no change notice (or lost connection, restarted follower, or failed barrier) says the
 * kept reply may be old.
 */

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * The gateway's bus, with its barriers, its follower's restarts and its connection changes in the
 * test's hands when it wants.
 */
function controlledBus(inner: MessageBus) {
  const watchers: ((connected: boolean) => void)[] = [];
  const resets: (() => void)[] = [];
  const control = {
    barriers: 0,
    /** Whether the follower may say it is current (holds its lease); off, every hit takes a barrier. */
    leased: false,
    /** When set, each barrier waits for this test to settle it (true: then the real one). */
    held: undefined as Deferred<boolean>[] | undefined,
    connection: (connected: boolean) => {
      for (const watcher of watchers) watcher(connected);
    },
    /** The follower starts over (a gap, a re-created consumer): notices may have been missed. */
    reset: () => {
      for (const reset of resets) reset();
    },
  };
  const bus: MessageBus = {
    request: (subject, payload, options) => inner.request(subject, payload, options),
    serve: (subject, options, handler) => inner.serve(subject, options, handler),
    publish: (event) => inner.publish(event),
    consume: (options) => inner.consume(options),
    deleteDurable: (name) => inner.deleteDurable(name),
    broadcast: (subject, payload) => inner.broadcast(subject, payload),
    onBroadcast: (subject, handler) => inner.onBroadcast(subject, handler),
    announce: (channel, payload) => inner.announce(channel, payload),
    follow: (channel, handlers) => {
      const follower = inner.follow(channel, handlers);
      resets.push(() => handlers.onReset());
      return {
        close: () => follower.close(),
        barrier: () => {
          control.barriers++;
          if (!control.held) return follower.barrier();
          const barrier = deferred<boolean>();
          control.held.push(barrier);
          return barrier.promise.then((ok) => ok && follower.barrier());
        },
        current: () => control.leased && follower.current(),
      };
    },
    kv: (bucket, options) => inner.kv(bucket, options),
    deadLetters: () => inner.deadLetters(),
    close: () => inner.close(),
    ping: () => inner.ping(),
    onConnectionChange: (handler) => {
      watchers.push(handler);
      return { close: async () => {} };
    },
  };
  return { bus, control };
}

const headers = { "x-api-key": OPERATOR_KEY };

describe("the gateway's read cache", () => {
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  let control: ReturnType<typeof controlledBus>["control"];
  let catalogue: MessageBus;
  let cache: ReadCache;
  let stopFollowing: () => Promise<void>;
  let clock: ManualClock;
  const MAX_AGE_MS = 5_000;
  /** The catalogue's state: the cheese's name and revision, and how often it was asked. */
  const state = {
    name: "Brie",
    revision: 1,
    asked: 0,
    listed: 0,
    hold: undefined as Promise<void> | undefined,
  };

  const notice = (payload: CheeseChangeNotice) => catalogue.announce(cheeseChangeNotices.channel, payload);
  /** A write at the catalogue: the state changes, then its notice is stored (as the catalogue does). */
  const write = async (name: string) => {
    state.name = name;
    state.revision++;
    await notice({ cheeseId: 5 });
  };
  const get = async (id = 5) => {
    const answer = await gateway.app.request(`/v2/cheeses/${id}`, { headers });
    return { status: answer.status, etag: answer.headers.get("etag"), body: await answer.text() };
  };
  const cheese = (name: string): Cheese => ({ id: 5, name, status: "available", organic: false });

  beforeEach(async () => {
    Object.assign(state, { name: "Brie", revision: 1, asked: 0, listed: 0, hold: undefined });
    const broker = createInProcessBroker();
    catalogue = broker.connect("catalogue");
    serveRpc(catalogue, catalogueRpc.getCheese, { queue: "catalogue" }, async ({ cheeseId }) => {
      state.asked++;
      if (cheeseId !== 5)
        throw new RemoteError({ status: 404, type: "not_found", message: "no such cheese" });
      // What the catalogue read before a write it is held across.
      const answer = { cheese: cheese(state.name), revision: state.revision };
      await state.hold;
      return answer;
    });
    serveRpc(catalogue, catalogueRpc.listCheeses, { queue: "catalogue" }, async () => {
      state.listed++;
      const answer = { items: [cheese(state.name)], nextCursor: null, hasMore: false, total: 1 };
      await state.hold;
      return answer;
    });
    serveRpc(catalogue, catalogueRpc.findCheeses, { queue: "catalogue" }, async () => {
      state.listed++;
      return { items: [cheese(state.name)] };
    });
    const controlled = controlledBus(broker.connect("gateway"));
    control = controlled.control;
    clock = new ManualClock();
    cache = new ReadCache(controlled.bus, { maxBytes: 1024 * 1024, maxAgeMs: MAX_AGE_MS, clock });
    const following = cache.follow();
    stopFollowing = () => following.close();
    gateway = await testGateway(controlled.bus, 1000, { readCache: cache });
  });
  afterEach(async () => {
    await stopFollowing();
    gateway.cleanup();
  });

  it("answers a repeated read without asking the catalogue, with the same body and ETag", async () => {
    const first = await get();
    expect(first).toEqual({ status: 200, etag: '"1"', body: JSON.stringify(cheese("Brie")) });
    expect(await get()).toEqual(first);
    expect(state.asked).toBe(1);
    const unchanged = await gateway.app.request("/v2/cheeses/5", {
      headers: { ...headers, "if-none-match": '"1"' },
    });
    expect(unchanged.status).toBe(304);
    expect(state.asked).toBe(1);
  });

  it("drops a cheese's reply on its notice, every reply on 'everything changed', and keeps no 404", async () => {
    await get();
    await write("Brie de Meaux");
    expect(await get()).toMatchObject({ etag: '"2"', body: JSON.stringify(cheese("Brie de Meaux")) });
    expect(state.asked).toBe(2);

    await notice({ cheeseId: 6 }); // another cheese: this one stays
    await get();
    expect(state.asked).toBe(2);

    state.name = "Brie noir";
    await notice({ all: true });
    expect(await get()).toMatchObject({ body: JSON.stringify(cheese("Brie noir")) });
    expect(state.asked).toBe(3);

    expect((await get(4)).status).toBe(404);
    expect((await get(4)).status).toBe(404);
    expect(state.asked).toBe(5);
  });

  it("does not keep the reply of a read that a write raced", async () => {
    const released = deferred<void>();
    state.hold = released.promise;
    const racing = get(); // the catalogue reads "Brie", then waits
    await expect.poll(() => state.asked).toBe(1);
    await write("Comté"); // the write's notice arrives while the read is under way
    state.hold = undefined;
    released.resolve();
    expect((await racing).body).toBe(JSON.stringify(cheese("Brie"))); // concurrent: either is right
    // The next read must not be answered with the old state from the cache.
    expect((await get()).body).toBe(JSON.stringify(cheese("Comté")));
    expect(state.asked).toBe(2);
  });

  it("answers a hit only after a barrier taken after the request, looking the reply up again then", async () => {
    await get();
    control.held = [];
    const barriersBefore = control.barriers;
    const hits = [get(), get(), get()];
    await expect.poll(() => control.held?.length).toBe(1); // the three share one barrier
    expect(control.barriers).toBe(barriersBefore + 1);
    let answered = false;
    void Promise.all(hits).then(() => {
      answered = true;
    });
    // A write acknowledged before the requests: its notice is applied before the barrier holds.
    await write("Gruyère");
    expect(answered).toBe(false);
    control.held[0]!.resolve(true);
    for (const hit of await Promise.all(hits)) expect(hit.body).toBe(JSON.stringify(cheese("Gruyère")));
  });

  it("answers a hit without a barrier while its follower is current (holds its lease), and takes one once it is not", async () => {
    await get();
    control.leased = true;
    control.held = [];
    const barriersBefore = control.barriers;
    // A write acknowledged before the request: the current follower has applied its notice.
    await write("Gruyère");
    expect((await get()).body).toBe(JSON.stringify(cheese("Gruyère")));
    expect((await get()).body).toBe(JSON.stringify(cheese("Gruyère")));
    expect(state.asked).toBe(2);
    expect(control.barriers).toBe(barriersBefore);
    // The lease lapsed: the next hit waits for a barrier, taken after it arrived.
    control.leased = false;
    const hit = get();
    await expect.poll(() => control.held?.length).toBe(1);
    expect(control.barriers).toBe(barriersBefore + 1);
    control.held[0]!.resolve(true);
    expect((await hit).body).toBe(JSON.stringify(cheese("Gruyère")));
    expect(state.asked).toBe(2);
  });

  describe("with a barrier out", () => {
    const key = { read: "getCheese", cheeseId: 5 } as const;
    let asked = 0;
    const ask = async () => {
      asked++;
      return { meta: { revision: state.revision }, body: state.name };
    };
    /** A read straight at the cache (it asks for its barrier at once), and whether it is answered. */
    const read = () => {
      const reading = { answered: false, reply: Promise.resolve(cache.read(key, ask)) };
      void reading.reply.then(() => {
        reading.answered = true;
      });
      return reading;
    };
    /** Lets the event loop go round once (its check phase included), so a due barrier would be taken. */
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
    /** The barriers taken so far, each held until the test settles it. */
    const barriers = () => control.held ?? [];

    beforeEach(async () => {
      asked = 0;
      await cache.read(key, ask);
      control.held = [];
    });

    it("answers a hit arriving meanwhile by the next barrier, taken when that one has settled", async () => {
      const first = read();
      await expect.poll(() => barriers().length).toBe(1);
      const second = read(); // the first barrier's request may have left before this read arrived
      await nextTurn();
      expect(barriers()).toHaveLength(1); // no second barrier while one is out

      barriers()[0]!.resolve(true);
      expect((await first.reply).body).toBe("Brie");
      await expect.poll(() => barriers().length).toBe(2); // the next one, once the first is back
      expect(second.answered).toBe(false);
      // A write acknowledged before the second read: the next barrier covers its notice.
      await write("Gruyère");
      barriers()[1]!.resolve(true);
      expect((await second.reply).body).toBe("Gruyère");
      expect(asked).toBe(2);
    });

    it("has the hits of many turns during one barrier share one next barrier", async () => {
      const barriersBefore = control.barriers;
      const first = read();
      await expect.poll(() => barriers().length).toBe(1);
      const meanwhile = [];
      for (let turn = 0; turn < 5; turn++) {
        meanwhile.push(read(), read());
        await nextTurn();
      }
      expect(control.barriers).toBe(barriersBefore + 1);

      barriers()[0]!.resolve(true);
      await first.reply;
      await expect.poll(() => barriers().length).toBe(2);
      barriers()[1]!.resolve(true);
      for (const reading of meanwhile) expect((await reading.reply).body).toBe("Brie");
      expect(control.barriers).toBe(barriersBefore + 2);
      expect(asked).toBe(1);
    });

    it("takes the next barrier when the one out fails, which cleared everything", async () => {
      const first = read();
      await expect.poll(() => barriers().length).toBe(1);
      const second = read();
      barriers()[0]!.resolve(false);
      expect((await first.reply).body).toBe("Brie"); // asked the catalogue again
      expect(asked).toBe(2);
      await expect.poll(() => barriers().length).toBe(2);
      expect(second.answered).toBe(false);
      barriers()[1]!.resolve(true);
      await second.reply;
      expect(asked).toBe(2); // the first read's answer, kept again, answered it
    });
  });

  it("clears everything when a barrier fails, and asks the catalogue instead", async () => {
    await get();
    control.held = [];
    const released = deferred<void>();
    state.hold = released.promise;
    const hit = get();
    await expect.poll(() => control.held?.length).toBe(1);
    control.held[0]!.resolve(false);
    await expect.poll(() => state.asked).toBe(2); // asked the catalogue, which holds its answer
    expect(cache.size).toBe(0);
    state.hold = undefined;
    released.resolve();
    expect((await hit).status).toBe(200);
    expect(cache.size).toBe(1); // kept again from the catalogue's answer
  });

  it("clears everything when the bus connection drops, asks the catalogue while it is down, and caches again once back", async () => {
    await get();
    expect(cache.size).toBe(1);
    control.connection(false);
    expect(cache.size).toBe(0);
    await get();
    await get();
    expect(state.asked).toBe(3);
    expect(cache.size).toBe(0); // nothing kept while notices may be lost

    control.connection(true);
    await get();
    await get();
    expect(state.asked).toBe(4);
  });

  it("clears everything when its follower starts over, and keeps no reply asked for before", async () => {
    await get();
    expect(cache.size).toBe(1);
    const released = deferred<void>();
    state.hold = released.promise;
    control.held = [];
    const hit = get();
    await expect.poll(() => control.held?.length).toBe(1);
    // A change whose notice this gateway missed (its consumer was re-created past it).
    state.name = "Brie de Meaux";
    state.revision++;
    control.reset();
    expect(cache.size).toBe(0);
    control.held[0]!.resolve(true);
    await expect.poll(() => state.asked).toBe(2); // the dropped reply: asked again
    state.hold = undefined;
    released.resolve();
    expect((await hit).body).toBe(JSON.stringify(cheese("Brie de Meaux")));
    const racing = deferred<void>();
    state.hold = racing.promise;
    control.held = undefined;
    await clock.advance(MAX_AGE_MS + 1);
    const asking = get();
    await expect.poll(() => state.asked).toBe(3);
    control.reset();
    state.hold = undefined;
    racing.resolve();
    await asking;
    expect(cache.size).toBe(0);
  });

  it("does not keep a reply asked for before a reconnect (notices may have been lost)", async () => {
    const released = deferred<void>();
    state.hold = released.promise;
    const asked = get();
    await expect.poll(() => state.asked).toBe(1);
    control.connection(false);
    control.connection(true);
    state.hold = undefined;
    released.resolve();
    await asked;
    expect(cache.size).toBe(0);
  });

  it("keeps a list page per query until any cheese's notice, and no page a write raced", async () => {
    const list = async (query: string) =>
      (await gateway.app.request(`/v2/cheeses?${query}`, { headers })).text();
    const page = await list("limit=5&sort=name");
    expect(JSON.parse(page).items[0].name).toBe("Brie");
    expect(await list("limit=5&sort=name")).toBe(page);
    expect(state.listed).toBe(1);
    await list("limit=6&sort=name"); // another query: asked
    expect(state.listed).toBe(2);
    const { token } = await gateway.tokens.issue(
      { kind: "client", sub: "ops", scopes: ["read:cheeses"] },
      60,
    );
    const found = async () => {
      const answer = await gateway.app.request("/v2/cheeses/findByStatus?status=available", {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(200);
      return answer.text();
    };
    await found();
    await found();
    expect(state.listed).toBe(3);

    await notice({ cheeseId: 99 }); // any cheese: every list may have changed
    await list("limit=5&sort=name");
    await found();
    expect(state.listed).toBe(5);

    const released = deferred<void>();
    state.hold = released.promise;
    await notice({ all: true });
    const racing = list("limit=5&sort=name");
    await expect.poll(() => state.listed).toBe(6);
    await write("Comté");
    state.hold = undefined;
    released.resolve();
    await racing;
    expect(JSON.parse(await list("limit=5&sort=name")).items[0].name).toBe("Comté");
    expect(state.listed).toBe(7);
  });

  it("asks the catalogue again once a reply is older than its max age, notice or not", async () => {
    await get();
    // A change whose notice never came: the catalogue died between its append and its notice.
    state.name = "Brie de Meaux";
    state.revision++;
    await clock.advance(MAX_AGE_MS);
    expect(await get()).toMatchObject({ etag: '"1"', body: JSON.stringify(cheese("Brie")) });
    expect(state.asked).toBe(1);
    await clock.advance(1);
    expect(await get()).toMatchObject({ etag: '"2"', body: JSON.stringify(cheese("Brie de Meaux")) });
    expect(state.asked).toBe(2);
    expect(await get()).toMatchObject({ etag: '"2"' });
    expect(state.asked).toBe(2);
  });

  it("keeps at most its bytes, dropping the least recently used", async () => {
    const small = new ReadCache(controlledBus(catalogue).bus, {
      maxBytes: 1_000,
      maxAgeMs: MAX_AGE_MS,
      clock,
    });
    const following = small.follow();
    const reply = (n: number) => async () => ({ meta: { revision: n }, body: "x".repeat(200) });
    for (let id = 1; id <= 3; id++) await small.read({ read: "getCheese", cheeseId: id }, reply(id));
    expect(small.size).toBe(1); // each takes 600 bytes: one fits
    let asked = 0;
    await small.read({ read: "getCheese", cheeseId: 3 }, async () => {
      asked++;
      return reply(3)();
    });
    expect(asked).toBe(0); // the most recent one is the one kept
    await following.close();
  });

  it("answers nothing from the cache while it does not follow the notices", async () => {
    const idle = new ReadCache(controlledBus(catalogue).bus, {
      maxBytes: 1_000_000,
      maxAgeMs: MAX_AGE_MS,
      clock,
    });
    let asked = 0;
    const ask = async () => {
      asked++;
      return { meta: { revision: 1 }, body: "Brie" };
    };
    await idle.read({ read: "getCheese", cheeseId: 5 }, ask);
    await idle.read({ read: "getCheese", cheeseId: 5 }, ask);
    expect(asked).toBe(2);
  });
});
