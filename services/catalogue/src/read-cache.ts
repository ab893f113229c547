import { type CheeseChangeNotice, cheeseChangeNotices } from "@cheese/contracts";
import type { Closable, Follower, MessageBus } from "@cheese/messaging";
import { type Clock, counter } from "@cheese/service-kit";

const readCacheAnswers = counter({
  name: "cheese_gateway_read_cache_total",
  help: "Catalogue reads by what the gateway's read cache did: hit (answered from it), miss (asked the catalogue), bypass (the bus disconnected: asked the catalogue, kept nothing)",
  labelNames: ["read", "outcome"],
});

/** The counters of one read's outcomes. */
interface Outcome {
  hit: ReturnType<typeof readCacheAnswers.labels>;
  miss: ReturnType<typeof readCacheAnswers.labels>;
  bypass: ReturnType<typeof readCacheAnswers.labels>;
}

/** A passed-through reply as the gateway keeps it: the body as the service encoded it, and its meta. */
export interface KeptReply<Meta> {
  meta: Meta;
  body: string | Uint8Array;
}

interface Entry {
  reply: KeptReply<unknown>;
  bytes: number;
  /** When it was kept (ms, by the injected clock). */
  keptAt: number;
}

/** A read asked of the catalogue and not yet answered; stale once a notice says its answer may be old. */
interface Asking {
  stale: boolean;
}

/**
 * What a kept reply answers: one cheese (dropped on that cheese's notice), or a list (`listCheeses`
 * or `findCheeses` with its RPC payload: dropped on any cheese's notice, as any change may move a
 * cheese into, out of or within it).
 */
export type ReadKey =
  | { read: "getCheese"; cheeseId: number }
  | { read: "listCheeses" | "findCheeses"; payload: unknown };

type ReadName = ReadKey["read"];
const reads: readonly ReadName[] = ["getCheese", "listCheeses", "findCheeses"];

/** Keys of lists start with this; a cheese's key is its id. */
const LIST = "?";
const keyOf = (key: ReadKey): string =>
  key.read === "getCheese" ? String(key.cheeseId) : `${LIST}${key.read}${JSON.stringify(key.payload)}`;

/** What an entry costs beyond its body (the key, the meta, the map's own slots), roughly. */
const ENTRY_OVERHEAD = 200;

export interface ReadCacheOptions {
  /** The most the kept bodies (and their bookkeeping) may take; the least recently used go first. */
  maxBytes: number;
  /**
   * The longest a reply is answered from the cache: the bound on a change whose notice never
   * left the catalogue (it died between its append and its notice, and no reply told of it).
   */
  maxAgeMs: number;
  clock: Clock;
}

/**
 * The cache of catalogue reads its callers keep (the gateway, `@cheese/catalogue/read-cache`) (`getCheese` per cheese id; `listCheeses` and
 * `findCheeses` per payload), dropped on the catalogue's change notices, without giving up
 * read-your-writes, with one NATS server or a cluster (docs/architecture.md, "Change notices and
 * the gateway's read cache"):
 *
 * - A catalogue write's notice is stored on the notice channel, and applied by every follower
 *   holding a read lease (or that lease ran out), before the catalogue answers the write. A hit
 *   is therefore answered at once while this gateway's follower is current (it holds its lease).
 *   Otherwise it waits for a barrier taken after the request arrived (the channel's last
 *   sequence, asked of its owner, and this gateway's follower having applied up to it): once it
 *   holds, every notice of a write anyone heard of before the request has been processed, and
 *   the entry is looked up again. The hits of one event-loop turn share one barrier.
 * - A reply is kept only when no notice for its cheese arrived while it was asked for, so a read
 *   racing a write never keeps the old state.
 * - A failed barrier, a notice that everything changed (a catalogue replica started), the
 *   follower starting over (notices may have been missed) and a drop or return of the bus
 *   connection clear everything; while the bus is disconnected every read goes to the catalogue.
 * - A reply older than `maxAgeMs` is asked again: a catalogue killed between an append and its
 *   notice acknowledged nothing, but its change is seen through the cache after that at the latest
 *   (and at once when the replica starts again and notices that everything changed).
 */
export class ReadCache {
  /** By key (`keyOf`), least recently used first. */
  private readonly entries = new Map<string, Entry>();
  /** The keys of the kept lists. */
  private readonly lists = new Set<string>();
  private bytes = 0;
  /** Reads in flight per key. */
  private readonly asking = new Map<string, Set<Asking>>();
  private connected = true;
  /** The follower of the catalogue's notices, while following. */
  private notices: Follower | undefined;
  /**
   * The barrier the next hits wait for, not yet started: it starts in the next check phase, or,
   * while another is in flight, in the check phase after that one is back.
   */
  private next: { done: Promise<boolean>; settle: (ok: boolean) => void } | undefined;
  /** A barrier is out (its request for the channel's last sequence sent, not yet settled). */
  private barrierOut = false;
  private readonly outcomes = new Map<ReadName, Outcome>(
    reads.map((read) => [
      read,
      {
        hit: readCacheAnswers.labels(read, "hit"),
        miss: readCacheAnswers.labels(read, "miss"),
        bypass: readCacheAnswers.labels(read, "bypass"),
      },
    ]),
  );

  constructor(
    private readonly bus: MessageBus,
    private readonly options: ReadCacheOptions,
  ) {}

  /** Follows the catalogue's notices and the bus connection; close to stop. */
  follow(): Closable {
    const notices = this.bus.follow(cheeseChangeNotices.channel, {
      onNotice: (payload) => {
        const notice = cheeseChangeNotices.notice.safeParse(payload);
        // A notice we cannot read could be about anything.
        if (notice.success) this.changed(notice.data);
        else this.clear();
      },
      // Notices may have been missed: anything may have changed.
      onReset: () => this.clear(),
    });
    this.notices = notices;
    const connection = this.bus.onConnectionChange((connected) => {
      this.connected = connected;
      this.clear();
    });
    return {
      close: async () => {
        // Stopped: no notice comes any more, so nothing is answered from the cache or kept.
        this.connected = false;
        this.notices = undefined;
        await Promise.all([notices.close(), connection.close()]);
        this.clear();
      },
    };
  }

  /**
   * The catalogue's reply for `key`: the kept one when there is one and it is still current,
   * else `ask()`'s, kept for the next read when nothing changed meanwhile. A hit while this
   * gateway's lease holds is the reply itself, not a promise: nothing is waited for.
   */
  read<Reply extends KeptReply<unknown>>(key: ReadKey, ask: () => Promise<Reply>): Reply | Promise<Reply> {
    const outcome = this.outcomes.get(key.read)!;
    if (!this.connected) {
      outcome.bypass.inc();
      return ask();
    }
    const id = keyOf(key);
    // Current (its lease holds): looked up at once, and a hit answered without a promise. Else
    // looked up again after a barrier: a notice processed meanwhile dropped it.
    if (this.entries.has(id) && this.notices?.current()) {
      const hit = this.hit<Reply>(id, outcome);
      if (hit) return hit;
    }
    return this.readAfterBarrier(id, outcome, ask);
  }

  private async readAfterBarrier<Reply extends KeptReply<unknown>>(
    id: string,
    outcome: Outcome,
    ask: () => Promise<Reply>,
  ): Promise<Reply> {
    if (this.entries.has(id) && !this.notices?.current() && (await this.barrier())) {
      const hit = this.hit<Reply>(id, outcome);
      if (hit) return hit;
    }
    outcome.miss.inc();
    const mine: Asking = { stale: false };
    const asking = this.asking.get(id) ?? new Set<Asking>();
    this.asking.set(id, asking);
    asking.add(mine);
    try {
      const reply = await ask();
      if (!mine.stale && this.connected) this.keep(id, reply);
      return reply;
    } finally {
      asking.delete(mine);
      if (asking.size === 0) this.asking.delete(id);
    }
  }

  /** The kept reply, counted as a hit, unless it is too old (then dropped) or gone. */
  private hit<Reply>(id: string, outcome: Outcome): Reply | undefined {
    const entry = this.entries.get(id);
    if (entry && this.options.clock.now().getTime() - entry.keptAt > this.options.maxAgeMs) this.drop(id);
    else if (entry) {
      // Most recently used last: eviction takes the first.
      this.entries.delete(id);
      this.entries.set(id, entry);
      outcome.hit.inc();
      return entry.reply as Reply;
    }
    return undefined;
  }

  /** How many replies are kept (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  private changed(notice: CheeseChangeNotice): void {
    if ("all" in notice) {
      this.clear();
      return;
    }
    const id = String(notice.cheeseId);
    this.drop(id);
    for (const list of this.lists) this.drop(list);
    for (const [key, asking] of this.asking)
      if (key === id || key.startsWith(LIST)) for (const one of asking) one.stale = true;
  }

  private clear(): void {
    this.entries.clear();
    this.lists.clear();
    this.bytes = 0;
    for (const asking of this.asking.values()) for (const one of asking) one.stale = true;
  }

  private drop(key: string): void {
    const entry = this.entries.get(key);
    this.lists.delete(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  private keep(key: string, reply: KeptReply<unknown>): void {
    // A copy: a view into the bus's receive buffer would keep the whole buffer alive.
    const body = typeof reply.body === "string" ? reply.body : reply.body.slice();
    const bytes =
      ENTRY_OVERHEAD + key.length * 2 + (typeof body === "string" ? body.length * 2 : body.byteLength);
    if (bytes > this.options.maxBytes) return;
    this.drop(key);
    this.entries.set(key, {
      reply: { meta: reply.meta, body },
      bytes,
      keptAt: this.options.clock.now().getTime(),
    });
    if (key.startsWith(LIST)) this.lists.add(key);
    this.bytes += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.options.maxBytes) break;
      this.drop(oldest);
    }
  }

  /**
   * Resolves once a barrier taken after this call holds: true when this gateway has applied every
   * notice stored before it was taken, false (and everything cleared) when that is not known in
   * time. At most one barrier is out: it is taken in a check phase, after every request read in
   * that turn's poll phase has asked for it; hits that ask while it is out wait for the next one,
   * taken once it has settled. So every hit still waits for a barrier taken after it asked, and a
   * busy gateway asks for the channel's last sequence once per round trip rather than once per
   * event-loop turn.
   */
  private barrier(): Promise<boolean> {
    if (!this.next) {
      let settle!: (ok: boolean) => void;
      const done = new Promise<boolean>((resolve) => {
        settle = resolve;
      });
      this.next = { done, settle };
      if (!this.barrierOut) setImmediate(this.takeBarrier);
    }
    return this.next.done;
  }

  /** Takes the barrier the waiting hits wait for (an arrow: passed to `setImmediate` as it is). */
  private readonly takeBarrier = (): void => {
    const waiting = this.next;
    if (!waiting) return;
    this.next = undefined;
    this.barrierOut = true;
    (this.notices?.barrier() ?? Promise.resolve(false)).then(
      (ok) => this.barrierDone(waiting.settle, ok),
      () => this.barrierDone(waiting.settle, false),
    );
  };

  private barrierDone(settle: (ok: boolean) => void, ok: boolean): void {
    this.barrierOut = false;
    if (!ok) this.clear();
    settle(ok);
    if (this.next) setImmediate(this.takeBarrier);
  }
}

/** `ask()`'s reply through the cache when there is one (`READ_CACHE=on`), else straight from it. */
export function readThrough<Reply extends KeptReply<unknown>>(
  cache: ReadCache | undefined,
  key: ReadKey,
  ask: () => Promise<Reply>,
): Reply | Promise<Reply> {
  return cache ? cache.read(key, ask) : ask();
}
