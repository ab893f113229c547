import type { EventStore, RecordedEvent } from "@cheese/event-store";
import type {
  CollectionDefinition,
  ProjectionDefinition,
  ReadModelSnapshots,
  ReadModelStore,
} from "@cheese/read-models";
import { followStore } from "./follow.ts";
import type { Logger } from "./logger.ts";
import { projectedSeries, projectionLag } from "./metrics.ts";

export interface ProjectionOptions {
  name: string;
  /**
   * The version of `apply`'s output. Raise it whenever the documents it writes change shape or
   * meaning: the read models are then rebuilt from the events into new collections, beside the
   * previous version's (which replicas still running the old code keep using).
   */
  version: number;
  /** The collections `apply` writes, with their indexes and the queries run on them. */
  collections: CollectionDefinition[];
  eventStore: EventStore;
  readModels: ReadModelStore;
  categories: string[];
  /** Applies one event. Must be idempotent: use `upsert` with the event's stream revision. */
  apply: (event: RecordedEvent, readModels: ReadModelStore) => Promise<void>;
  logger: Logger;
  /** Persist the checkpoint after this many applied events (default 100)... */
  checkpointEvery?: number;
  /** ...and this long after the last progress when fewer came (default 1 s). */
  checkpointIdleMs?: number;
  /**
   * Where the read models keep snapshots (`readModels.snapshots`, the in-memory adapter): save one
   * this often while events are applied (default 60 s), besides after a catch-up of many events
   * and at close.
   */
  snapshotEveryMs?: number;
}

/** A catch-up that applied at least this many events is followed by a snapshot at once. */
const SNAPSHOT_AFTER_CATCH_UP = 10_000;

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
 * follows live appends, through the kit's one store-following loop (`followStore`): a failing
 * handler is logged and the subscription restarts after a pause from the last checkpoint, so one
 * bad event does not silently stop the projection.
 *
 * What a query waits for (docs/architecture.md, "Catch-up"): the head of the store is read, and
 * when it lies past what the projection has confirmed — events applied, or a checkpoint of its
 * subscription saying nothing of its categories came up to there — the events in between that
 * belong to its categories are looked for, and waited for if there are some.
 */
export async function startProjection(options: ProjectionOptions): Promise<Projection> {
  const { name, version, collections, eventStore, readModels, categories, apply, logger } = options;
  const checkpointEvery = options.checkpointEvery ?? 100;
  const checkpointIdleMs = options.checkpointIdleMs ?? 1_000;
  const definition = { name, version, collections };
  const key = await readModels.defineProjection(definition);
  const { snapshots } = readModels;
  let stored = await readModels.getCheckpoint(key);
  if (snapshots) stored = await restoreSnapshot(snapshots, definition, eventStore, logger);
  if (stored === undefined && (readModels.durable || snapshots)) {
    logger.info({ projection: name, version }, "projection has no checkpoint at this version: rebuilding");
  }
  /** Every event of our categories up to here is applied. */
  let confirmed = stored ?? -1;
  let savedCheckpoint = confirmed;
  let appliedSinceSave = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  let saving: Promise<void> = Promise.resolve();
  let closed = false;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const waiters = new Set<() => void>();
  /** A head position up to which every event of our categories is known to be applied. */
  let verifiedHead = -1;
  const projected = projectedSeries(name);

  // Snapshots (docs/architecture.md, "Snapshots"): taken only between two events, never while
  // one is half applied, so a snapshot holds exactly the events up to its position.
  const snapshotEveryMs = options.snapshotEveryMs ?? 60_000;
  let applying = false;
  let applied = 0;
  let appliedAtSnapshot = 0;
  let snapshotDue = false;
  let snapshotting: Promise<void> | undefined;
  const takeSnapshot = () => {
    snapshotDue = false;
    if (!snapshots || snapshotting || applied === appliedAtSnapshot) return;
    const count = applied;
    const position = confirmed;
    const started = Date.now();
    snapshotting = snapshots
      .save(definition, position)
      .then(
        () => {
          appliedAtSnapshot = count;
          logger.info({ projection: name, position, ms: Date.now() - started }, "read models snapshot saved");
        },
        (error: unknown) => logger.warn({ err: error, projection: name }, "read models snapshot not saved"),
      )
      .finally(() => {
        snapshotting = undefined;
      });
  };
  const snapshotTimer = snapshots
    ? setInterval(() => {
        if (applying) snapshotDue = true;
        else takeSnapshot();
      }, snapshotEveryMs).unref()
    : undefined;

  const saveCheckpoint = async () => {
    clearTimeout(idleTimer);
    idleTimer = undefined;
    appliedSinceSave = 0;
    if (confirmed > savedCheckpoint) {
      const position = confirmed;
      savedCheckpoint = position;
      saving = saving.then(() => readModels.setCheckpoint(key, position));
      await saving;
    }
  };

  const progressed = (position: number) => {
    if (position <= confirmed) return;
    confirmed = position;
    for (const wake of waiters) wake();
    // Checkpoints follow event counts, not positions: on EventStoreDB positions are byte offsets.
    if (appliedSinceSave >= checkpointEvery) {
      void saveCheckpoint().catch((error: unknown) =>
        logger.warn({ err: error, projection: name }, "projection checkpoint not saved"),
      );
    } else {
      idleTimer ??= setTimeout(() => {
        idleTimer = undefined;
        if (!closed) void saveCheckpoint().catch(() => {});
      }, checkpointIdleMs).unref();
    }
  };

  // Everything of our categories up to this head is applied once a run of the follower is caught up.
  let headAtStart = -1;
  const follower = await followStore({
    name: `projection ${name}`,
    eventStore,
    categories,
    logger,
    after: () => (confirmed === -1 ? undefined : confirmed),
    beforeSubscribe: async () => {
      headAtStart = await eventStore.headPosition();
    },
    handle: async (event) => {
      applying = true;
      try {
        await apply(event, readModels);
      } finally {
        applying = false;
      }
      projected.inc();
      applied += 1;
      appliedSinceSave += 1;
      progressed(event.position);
      if (snapshotDue) takeSnapshot();
    },
    onCheckpoint: progressed,
    onCaughtUp: () => {
      progressed(headAtStart);
      markReady();
      void saveCheckpoint().catch(() => {});
      if (applied - appliedAtSnapshot >= SNAPSHOT_AFTER_CATCH_UP) takeSnapshot();
    },
  });

  // Lag, when scraped: how long ago the oldest event of ours not applied yet was recorded.
  const stopObserving = projectionLag.observe({ projection: name }, async () => {
    const head = await eventStore.headPosition();
    if (confirmed >= head) return 0;
    for await (const event of eventStore.readAll({ after: confirmed, until: head, categories, maxCount: 1 }))
      return Math.max(0, (Date.now() - Date.parse(event.createdAt)) / 1000);
    return 0;
  });

  const progress = (deadline: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        waiters.delete(wake);
        clearTimeout(timer);
        resolve();
      };
      waiters.add(wake);
      const timer = setTimeout(wake, Math.max(0, Math.min(25, deadline - Date.now())));
      timer.unref();
    });

  return {
    ready,
    async catchUp(timeoutMs = 2000) {
      const head = await eventStore.headPosition();
      if (confirmed >= head || head <= verifiedHead) return true;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // The oldest event of ours not confirmed yet, if any lies before the head.
        let pending: number | undefined;
        for await (const event of eventStore.readAll({
          after: confirmed,
          until: head,
          categories,
          maxCount: 1,
        }))
          pending = event.position;
        if (pending === undefined || confirmed >= head) {
          verifiedHead = Math.max(verifiedHead, head);
          return true;
        }
        while (confirmed < pending) {
          if (Date.now() >= deadline) return false;
          await progress(deadline);
        }
      }
    },
    async close() {
      closed = true;
      stopObserving();
      clearTimeout(idleTimer);
      clearInterval(snapshotTimer);
      await follower.close();
      await saveCheckpoint().catch(() => {});
      // No event is being applied any more: what is applied is exactly the events up to confirmed.
      await snapshotting;
      takeSnapshot();
      await snapshotting;
    },
  };
}

/**
 * Loads the projection's snapshot into the read models; its position, or undefined (a rebuild
 * from the first event) when there is none, it cannot be used, or it lies past the event store's
 * head (a store that was replaced or emptied since: its events are not those it was made of).
 */
async function restoreSnapshot(
  snapshots: ReadModelSnapshots,
  definition: ProjectionDefinition,
  eventStore: EventStore,
  logger: Logger,
): Promise<number | undefined> {
  const projection = definition.name;
  let restored: Awaited<ReturnType<ReadModelSnapshots["restore"]>>;
  const started = Date.now();
  try {
    restored = await snapshots.restore(definition, { notAfter: await eventStore.headPosition() });
  } catch (error) {
    logger.warn({ err: error, projection }, "read models snapshot not read: rebuilding");
    return undefined;
  }
  if ("ignored" in restored) {
    if (restored.ignored !== "none")
      logger.warn({ projection, reason: restored.ignored }, "read models snapshot ignored: rebuilding");
    return undefined;
  }
  logger.info(
    { projection, position: restored.position, ms: Date.now() - started },
    "read models restored from snapshot",
  );
  return restored.position;
}
