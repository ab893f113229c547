import type { Clock, Timer } from "./clock.ts";
import type { Logger } from "./logger.ts";

/**
 * Deferred work, the one way of every service (docs/architecture.md "Deferred work"): a set of
 * keys, each due at a time, whose work runs once the service's clock reaches that time.
 *
 * - Durable: the set is derived from what the service stores (the placed orders, the keys not
 *   warned yet, the deliveries waiting), never kept on its own: the owner fills it at start from
 *   its read model or store and keeps it up to date as it follows its events (`set`, `delete`),
 *   so a restarted replica has the same set.
 * - Once across replicas: every replica holds the same set and runs the same work when due; the
 *   work is a command on the key's stream (`handleCommand`, an expected-revision append) whose
 *   decider decides nothing once it is done, so of racing replicas one records the outcome.
 * - On the injected clock: one clock timer, for the earliest key, so a test moves time with
 *   `ManualClock.advance` and the work runs as it passes.
 * - Bounded: at most `concurrency` runs at once, the earliest due first; a run that throws is
 *   tried again after a backoff (1 s, doubled each time, at most `retryMaxMs`) unless the key was
 *   set again or deleted meanwhile.
 */
export interface DueTimers<K extends DueKey, V = undefined> {
  /** Runs `key`'s work at `dueAt` (epoch ms; at once when it has passed); a key set again moves. */
  set(key: K, dueAt: number, ...value: [V] extends [undefined] ? [] : [V]): void;
  /** The key is no longer due (a run under way finishes). */
  delete(key: K): void;
  /** When the key is due, if it is. */
  dueAt(key: K): number | undefined;
  /** Waits until no run is under way, the runs it starts meanwhile included. */
  settle(): Promise<void>;
  /** Stops the timer and waits for the runs under way. */
  close(): Promise<void>;
}

export type DueKey = string | number;

export interface DueTimersOptions<K extends DueKey, V> {
  /** Named in the log line of a failed run. */
  name: string;
  clock: Clock;
  logger: Logger;
  /** The key's work; it must be safe to run on every replica (see above). */
  run: (key: K, value: V) => Promise<void>;
  /** Runs under way at most (8). */
  concurrency?: number;
  /** The longest wait before a failed run is tried again (30 s). */
  retryMaxMs?: number;
}

interface Entry<K, V> {
  key: K;
  dueAt: number;
  value: V;
  /** Failed runs in a row. */
  failures: number;
}

const FIRST_RETRY_MS = 1000;

export function dueTimers<K extends DueKey, V = undefined>(options: DueTimersOptions<K, V>): DueTimers<K, V> {
  const { clock, logger, run } = options;
  const concurrency = options.concurrency ?? 8;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  const entries = new Map<K, Entry<K, V>>();
  /** Min-heap by due time; an entry no longer in `entries` (moved, deleted) is skipped when met. */
  const heap: Entry<K, V>[] = [];
  const ready: Entry<K, V>[] = [];
  const running = new Set<Promise<void>>();
  let timer: Timer | undefined;
  let armedAt: number | undefined;
  let closed = false;

  const push = (entry: Entry<K, V>) => {
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]!.dueAt <= heap[i]!.dueAt) break;
      [heap[parent], heap[i]] = [heap[i]!, heap[parent]!];
      i = parent;
    }
  };
  const pop = (): Entry<K, V> | undefined => {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && heap[left]!.dueAt < heap[least]!.dueAt) least = left;
        if (right < heap.length && heap[right]!.dueAt < heap[least]!.dueAt) least = right;
        if (least === i) break;
        [heap[least], heap[i]] = [heap[i]!, heap[least]!];
        i = least;
      }
    }
    return top;
  };
  const live = (entry: Entry<K, V>) => entries.get(entry.key) === entry;

  /** Moves what is due to `ready`, starts what it may, and sets the timer for the next. */
  const fire = () => {
    if (closed) return;
    const now = clock.now().getTime();
    while (heap.length > 0 && (!live(heap[0]!) || heap[0]!.dueAt <= now)) {
      const entry = pop()!;
      if (live(entry)) ready.push(entry);
    }
    pump();
    arm();
  };

  const arm = () => {
    while (heap.length > 0 && !live(heap[0]!)) pop();
    const next = heap[0]?.dueAt;
    if (next === armedAt) return;
    timer?.cancel();
    armedAt = next;
    timer =
      next === undefined
        ? undefined
        : clock.setTimeout(() => {
            armedAt = undefined;
            timer = undefined;
            fire();
          }, next - clock.now().getTime());
  };

  const pump = () => {
    while (!closed && running.size < concurrency && ready.length > 0) {
      const entry = ready.shift()!;
      if (!live(entry)) continue; // moved or deleted while it waited for a slot
      const work = run(entry.key, entry.value).then(
        () => {
          if (live(entry)) entries.delete(entry.key);
        },
        (error: unknown) => {
          if (closed || !live(entry)) return;
          const retryMs = Math.min(FIRST_RETRY_MS * 2 ** entry.failures, retryMaxMs);
          logger.warn({ err: error, key: entry.key, retryMs }, `${options.name} failed; trying again`);
          schedule({ ...entry, dueAt: clock.now().getTime() + retryMs, failures: entry.failures + 1 });
        },
      );
      const tracked = work.finally(() => {
        running.delete(tracked);
        pump();
      });
      running.add(tracked);
    }
  };

  const schedule = (entry: Entry<K, V>) => {
    entries.set(entry.key, entry);
    push(entry);
    if (entry.dueAt <= clock.now().getTime()) fire();
    else if (armedAt === undefined || entry.dueAt < armedAt) arm();
  };

  return {
    set(key, dueAt, ...value) {
      if (closed) return;
      schedule({ key, dueAt, value: value[0] as V, failures: 0 });
    },
    delete(key) {
      entries.delete(key);
    },
    dueAt: (key) => entries.get(key)?.dueAt,
    async settle() {
      while (running.size > 0) await Promise.allSettled([...running]);
    },
    async close() {
      closed = true;
      timer?.cancel();
      entries.clear();
      await Promise.allSettled([...running]);
    },
  };
}
