import { categoryOf, type EventStore, type RecordedEvent, type Subscription } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import type { Logger } from "./logger.ts";

export interface ProjectionOptions {
  name: string;
  eventStore: EventStore;
  readModels: ReadModelStore;
  categories: string[];
  /** Applies one event. Must be idempotent: use `upsert` with the event's stream revision. */
  apply: (event: RecordedEvent, readModels: ReadModelStore) => Promise<void>;
  logger: Logger;
  /** Persist the checkpoint every this many events (and when idle). */
  checkpointEvery?: number;
}

export interface Projection {
  /** Resolves once every event that existed at start has been applied. */
  readonly ready: Promise<void>;
  /**
   * Read-your-writes: waits until every event appended so far, by any replica, is applied.
   * Resolves false when that takes longer than `timeoutMs`.
   */
  catchUp(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Keeps read models current from the event store: catches up from the stored checkpoint, then
 * follows live appends. A failing handler is logged and the subscription restarts after a pause
 * from the last checkpoint, so one bad event does not silently stop the projection.
 */
export async function startProjection(options: ProjectionOptions): Promise<Projection> {
  const { name, eventStore, readModels, categories, apply, logger } = options;
  const checkpointEvery = options.checkpointEvery ?? 100;
  let applied = (await readModels.getCheckpoint(name)) ?? -1;
  let savedCheckpoint = applied;
  let subscription: Subscription | undefined;
  let closed = false;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const waiters = new Set<() => void>();
  /** A head position up to which every event of our categories is known to be applied. */
  let verifiedHead = -1;

  const saveCheckpoint = async () => {
    if (applied > savedCheckpoint) {
      savedCheckpoint = applied;
      await readModels.setCheckpoint(name, applied);
    }
  };

  const subscribe = async () => {
    // Everything of our categories up to this head is delivered before onCaughtUp.
    const headAtStart = await eventStore.headPosition();
    if (closed) return;
    subscription = eventStore.subscribe({
      categories,
      after: applied === -1 ? undefined : applied,
      handler: async (event) => {
        await apply(event, readModels);
        applied = event.position;
        if (applied - savedCheckpoint >= checkpointEvery) await saveCheckpoint();
        for (const wake of waiters) wake();
      },
      onCaughtUp: () => {
        verifiedHead = Math.max(verifiedHead, headAtStart);
        markReady();
        void saveCheckpoint();
      },
      onError: (error) => {
        logger.error({ err: error, projection: name }, "projection stopped; restarting in 1s");
        if (!closed) setTimeout(() => !closed && void subscribe(), 1000).unref();
      },
    });
  };
  await subscribe();

  return {
    ready,
    async catchUp(timeoutMs = 2000) {
      const head = await eventStore.headPosition();
      if (applied >= head || head <= verifiedHead) return true;
      // The head may belong to a category this projection does not follow (id blocks, name
      // reservations): then nothing of ours is pending, which one scan tells without waiting.
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Up to verifiedHead nothing of ours is pending: only what lies past it needs a look.
        const from = Math.max(applied, verifiedHead);
        if (applied >= head || (await isCaughtUpFor(eventStore, categories, from, head))) {
          verifiedHead = Math.max(verifiedHead, head);
          return true;
        }
        if (Date.now() >= deadline) return false;
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
          setTimeout(wake, 25).unref();
        });
      }
    },
    async close() {
      closed = true;
      await subscription?.close();
      await saveCheckpoint().catch(() => {});
    },
  };
}

/** True when no event of our categories lies between `applied` and `head`. */
async function isCaughtUpFor(
  eventStore: EventStore,
  categories: string[],
  applied: number,
  head: number,
): Promise<boolean> {
  // readAll pages through the store; the walk stops at the head, however many events lie between.
  for await (const event of eventStore.readAll({ after: applied })) {
    if (event.position > head) break;
    if (categories.includes(categoryOf(event.streamName))) return false;
  }
  return true;
}
