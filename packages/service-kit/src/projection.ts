import type { EventStore, RecordedEvent } from "@cheese/event-store";
import type {
  CollectionDefinition,
  Generation,
  ProjectionDefinition,
  ReadModelSnapshots,
  ReadModelStore,
} from "@cheese/read-models";
import type { Clock } from "./clock.ts";
import { followStore } from "./follow.ts";
import type { Logger } from "./logger.ts";
import { observedGauge, projectedSeries, projectionLag } from "./metrics.ts";

export interface ProjectionOptions {
  name: string;
  /**
   * The version of `apply`'s output. Raise it whenever the documents it writes change shape or
   * meaning: the read models are then rebuilt from the events into new collections, beside the
   * previous version's, which answer meanwhile (docs/architecture.md, "Rebuilds without
   * downtime").
   */
  version: number;
  /** The collections `apply` writes, with their indexes and the queries run on them. */
  collections: CollectionDefinition[];
  eventStore: EventStore;
  readModels: ReadModelStore;
  categories: string[];
  /**
   * Applies one event. Must be idempotent: use `upsert` with the event's stream revision. Writes
   * through the `readModels` it is given: during a rebuild that reaches the generation being built.
   */
  apply: (event: RecordedEvent, readModels: ReadModelStore, context: ApplyContext) => Promise<void>;
  logger: Logger;
  /**
   * Event types whose `apply` writes the same thing whatever the stream held before: it reads no
   * stored document, and any two of these types write the same fields of the same document (the
   * catalogue's CheeseUpdated and CheeseStatusChanged). Of a run of them in one stream, a
   * catch-up that no read reaches yet (from empty, from a snapshot before the projection is
   * ready, a rebuild beside the live read models) applies only the last: the store leaves out
   * the rest (`SubscribeOptions.overwrites`; the SQLite store does, others apply every event).
   * Only for a service that reads its read models once `ready` has resolved, as the catalogue does.
   */
  overwrites?: readonly string[];
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
  /** Called once reads have switched to a rebuilt generation (caches of what they answered go stale). */
  onSwitch?: () => void;
  /** How often a rebuild logs its progress (default 5 s). */
  rebuildLogEveryMs?: number;
  /**
   * Durable read models, shared by replicas: how often a replica looks whether another one
   * switched reads to a new generation, to follow it (default 5 s)...
   */
  generationCheckMs?: number;
  /** ...and how long after a switch the generation read before is dropped (default 30 s). */
  dropAfterMs?: number;
  /** Times the pause before a failed run starts again (real time unless a test injects one). */
  clock?: Clock;
}

/** What `apply` is told besides the event. */
export interface ApplyContext {
  /**
   * True while the event goes into a generation rebuilt beside the one reads reach: work beyond
   * the read models (a timer, a message) is the served generation's to do, not the rebuild's.
   */
  readonly rebuilding: boolean;
}

/** A rebuild ended before its switch: the projection closed, or another replica switched first. */
class RebuildStopped extends Error {
  override readonly name = "RebuildStopped";
}

/** A catch-up that applied at least this many events is followed by a snapshot at once. */
const SNAPSHOT_AFTER_CATCH_UP = 10_000;

/** How a rebuild ended: the generation reads switched to, the events it applied, how long it took. */
export interface RebuildOutcome {
  version: number;
  generation: number;
  events: number;
  ms: number;
}

export interface Projection {
  /** Resolves once every event that existed at start has been applied to what reads reach. */
  readonly ready: Promise<void>;
  /**
   * Read-your-writes: waits until every event appended so far, by any replica, is applied.
   * Resolves false when that takes longer than `timeoutMs`.
   */
  catchUp(timeoutMs?: number): Promise<boolean>;
  /**
   * Rebuilds the read models from the first event into a new generation beside the one reads
   * reach, which keeps answering (and following the events) until the new one has caught up;
   * then reads switch to it and the old one is dropped. Resolves then; a rebuild already under
   * way (a version change's, or one asked for before) is joined rather than started again.
   */
  rebuild(): Promise<RebuildOutcome>;
  close(): Promise<void>;
}

const rebuildProgress = observedGauge({
  name: "cheese_projection_rebuild_progress_ratio",
  help: "How far a projection's rebuild beside its live read models has come: the position applied over the event store's head when it began (0 to 1), by projection; absent when none runs",
  labelNames: ["projection"],
});

/** One generation followed: its events applied as they come, its checkpoint and snapshots kept. */
interface Run {
  readonly generation: Generation;
  /** Every event of our categories up to here is applied. */
  confirmed(): number;
  /** Events applied by this run. */
  applied(): number;
  /** Resolves when everything that existed when it started is applied. */
  readonly caughtUp: Promise<void>;
  /** Resolves when it is closed. */
  readonly stopped: Promise<void>;
  /** Reads reach it from now on: `apply` is no longer told it rebuilds. */
  serving(): void;
  /** Snapshots from now on (of a generation reads reach, of the current version). */
  takeSnapshots(): void;
  close(options?: { snapshot?: boolean }): Promise<void>;
}

/**
 * Keeps read models current from the event store: catches up from the stored checkpoint, then
 * follows live appends, through the kit's one store-following loop (`followStore`): a failing
 * handler is logged and the subscription restarts after a pause from the last checkpoint, so one
 * bad event does not silently stop the projection.
 *
 * Rebuilds (docs/architecture.md, "Rebuilds without downtime"): when this version has no live
 * generation and the previous version has one, reads reach the previous version's, which this
 * code keeps following, while this version is built beside it from the first event; once it has
 * caught up, reads switch to it. `rebuild()` does the same into a new generation of this version.
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
  const snapshotEveryMs = options.snapshotEveryMs ?? 60_000;
  const rebuildLogEveryMs = options.rebuildLogEveryMs ?? 5_000;
  const dropAfterMs = readModels.durable ? (options.dropAfterMs ?? 30_000) : 0;
  const definition: ProjectionDefinition = { name, version, collections };
  await readModels.defineProjection(definition);
  const { snapshots } = readModels;
  const projected = projectedSeries(name);
  let closed = false;
  const waiters = new Set<() => void>();
  const wakeWaiters = () => {
    for (const wake of waiters) wake();
  };
  /** A head position up to which every event of our categories is known to be applied. */
  let verifiedHead = -1;
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

  /**
   * Follows `generation` from `from` (undefined: the first event). `unread`: no read reaches the
   * generation before this run has caught up, so the catch-up may leave out what `overwrites`
   * allows (never again once caught up, a restart of the follower included).
   */
  const follow = async (
    generation: Generation,
    from: number | undefined,
    label: string,
    { rebuilding = false, unread = false } = {},
  ): Promise<Run> => {
    const writer: ReadModelStore = { ...readModels, collection: generation.collection };
    const context = { rebuilding };
    let confirmed = from ?? -1;
    let savedCheckpoint = confirmed;
    let appliedSinceSave = 0;
    let idleTimer: NodeJS.Timeout | undefined;
    let saving: Promise<void> = Promise.resolve();
    let stopped = false;
    let markCaughtUp: () => void = () => {};
    const caughtUp = new Promise<void>((resolve) => {
      markCaughtUp = resolve;
    });
    let markStopped: () => void = () => {};
    const stoppedPromise = new Promise<void>((resolve) => {
      markStopped = resolve;
    });

    // Snapshots (docs/architecture.md, "Snapshots"): taken only between two events, never while
    // one is half applied, so a snapshot holds exactly the events up to its position.
    let snapshotsOn = false;
    let applying = false;
    let applied = 0;
    let appliedAtSnapshot = 0;
    let snapshotDue = false;
    let snapshotting: Promise<void> | undefined;
    let snapshotTimer: NodeJS.Timeout | undefined;
    const takeSnapshot = () => {
      snapshotDue = false;
      if (!snapshots || !snapshotsOn || snapshotting || applied === appliedAtSnapshot) return;
      const count = applied;
      const position = confirmed;
      const started = Date.now();
      snapshotting = snapshots
        .save(definition, generation, position)
        .then(
          () => {
            appliedAtSnapshot = count;
            logger.info(
              { projection: name, position, ms: Date.now() - started },
              "read models snapshot saved",
            );
          },
          (error: unknown) => logger.warn({ err: error, projection: name }, "read models snapshot not saved"),
        )
        .finally(() => {
          snapshotting = undefined;
        });
    };

    const saveCheckpoint = async () => {
      clearTimeout(idleTimer);
      idleTimer = undefined;
      appliedSinceSave = 0;
      if (confirmed > savedCheckpoint) {
        const position = confirmed;
        savedCheckpoint = position;
        saving = saving.then(() => readModels.setCheckpoint(generation.key, position));
        await saving;
      }
    };

    const progressed = (position: number) => {
      if (position <= confirmed) return;
      confirmed = position;
      wakeWaiters();
      // Checkpoints follow event counts, not positions: on EventStoreDB positions are byte offsets.
      if (appliedSinceSave >= checkpointEvery) {
        void saveCheckpoint().catch((error: unknown) =>
          logger.warn({ err: error, projection: name }, "projection checkpoint not saved"),
        );
      } else {
        idleTimer ??= setTimeout(() => {
          idleTimer = undefined;
          if (!stopped) void saveCheckpoint().catch(() => {});
        }, checkpointIdleMs).unref();
      }
    };

    // Everything of our categories up to this head is applied once a run of the follower is caught up.
    let headAtStart = -1;
    let caughtUpOnce = false;
    const follower = await followStore({
      name: `projection ${name}${label}`,
      eventStore,
      categories,
      logger,
      ...(options.clock ? { clock: options.clock } : {}),
      after: () => (confirmed === -1 ? undefined : confirmed),
      overwrites: () => (unread && !caughtUpOnce ? (options.overwrites ?? []) : []),
      beforeSubscribe: async () => {
        headAtStart = await eventStore.headPosition();
      },
      handle: async (event) => {
        applying = true;
        try {
          await apply(event, writer, context);
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
        caughtUpOnce = true;
        progressed(headAtStart);
        // Indexes put off while the generation filled from empty are built before it is ready.
        void Promise.resolve(readModels.caughtUp?.(definition, generation))
          .catch((error: unknown) =>
            logger.warn({ err: error, projection: name }, "read models not settled after the catch-up"),
          )
          .then(markCaughtUp);
        void saveCheckpoint().catch(() => {});
        if (applied - appliedAtSnapshot >= SNAPSHOT_AFTER_CATCH_UP) takeSnapshot();
      },
    });

    return {
      generation,
      confirmed: () => confirmed,
      applied: () => applied,
      caughtUp,
      stopped: stoppedPromise,
      serving() {
        context.rebuilding = false;
      },
      takeSnapshots() {
        if (!snapshots || snapshotsOn) return;
        snapshotsOn = true;
        snapshotTimer = setInterval(() => {
          if (applying) snapshotDue = true;
          else takeSnapshot();
        }, snapshotEveryMs).unref();
        takeSnapshot();
      },
      async close({ snapshot = true } = {}) {
        stopped = true;
        markStopped();
        clearTimeout(idleTimer);
        clearInterval(snapshotTimer);
        await follower.close();
        await saveCheckpoint().catch(() => {});
        // No event is being applied any more: what is applied is exactly the events up to confirmed.
        await snapshotting;
        if (snapshot) {
          takeSnapshot();
          await snapshotting;
        }
      },
    };
  };

  // Where reads start: this version's live generation; else the previous version's, while this
  // one is built beside it; else this version built from the first event before reads are served.
  if (snapshots) await restoreSnapshot(snapshots, definition, eventStore, logger);
  const live = await readModels.liveGeneration(definition, version);
  let previous: { generation: Generation; position: number } | undefined;
  if (!live && version > 0) {
    const before = { ...definition, version: version - 1 };
    if (snapshots) await restoreSnapshot(snapshots, before, eventStore, logger);
    const generation = await readModels.liveGeneration(definition, version - 1);
    const position = generation && (await readModels.getCheckpoint(generation.key));
    if (generation && position !== undefined) previous = { generation, position };
  }

  let served: Run;
  type Rebuilding = { target?: Generation; run?: Run; done: Promise<RebuildOutcome> };
  let rebuilding: Rebuilding | undefined;
  const dropping = new Set<{ timer: NodeJS.Timeout; drop: () => Promise<void> }>();

  /** Drops a generation reads no longer reach: at once in memory, after `dropAfterMs` when replicas share it. */
  const dropLater = (generation: Generation) => {
    const drop = () =>
      readModels
        .dropGeneration(definition, generation)
        .then(() =>
          logger.info(
            { projection: name, version: generation.version, generation: generation.generation },
            "projection generation dropped",
          ),
        )
        .catch((error: unknown) =>
          logger.warn({ err: error, projection: name }, "projection generation not dropped"),
        );
    if (dropAfterMs === 0) return void drop();
    const entry = {
      timer: setTimeout(() => {
        dropping.delete(entry);
        void drop();
      }, dropAfterMs).unref(),
      drop,
    };
    dropping.add(entry);
  };

  /**
   * Reads reach `run` from now on; the run read before stops, and its generation goes (unless
   * another replica switched, which drops it).
   */
  const switchTo = async (run: Run, { drop = true } = {}) => {
    const old = served;
    await readModels.serve(definition, run.generation);
    served = run;
    // Work beyond the read models moves with the reads: done twice for an event both apply while
    // the old run stops, rather than by neither.
    run.serving();
    wakeWaiters();
    options.onSwitch?.();
    await old.close({ snapshot: false });
    run.takeSnapshots();
    // The previous version's collections stay, where replicas share them, for replicas still on it.
    if (drop && (old.generation.version === version || !readModels.durable)) dropLater(old.generation);
  };

  const startRebuild = async (
    entry: Rebuilding,
    generation: Promise<Generation>,
    reason: string,
  ): Promise<RebuildOutcome> => {
    const target = await generation;
    entry.target = target;
    const started = Date.now();
    const head = await eventStore.headPosition();
    const from = await readModels.getCheckpoint(target.key);
    const where = { projection: name, version: target.version, generation: target.generation };
    logger.info(
      { ...where, reason, head, resumedAt: from },
      "projection rebuild started beside the live read models",
    );
    const run = await follow(target, from, ` (rebuild of generation ${target.generation})`, {
      rebuilding: true,
      unread: true,
    });
    entry.run = run;
    const done = () => (head <= 0 ? 1 : Math.min(1, Math.max(0, run.confirmed()) / head));
    const stopObserving = rebuildProgress.observe({ projection: name }, done);
    const logTimer = setInterval(() => {
      logger.info(
        {
          ...where,
          events: run.applied(),
          position: run.confirmed(),
          head,
          percent: Math.floor(done() * 100),
        },
        "projection rebuild progress",
      );
    }, rebuildLogEveryMs).unref();
    try {
      await Promise.race([run.caughtUp, run.stopped]);
    } finally {
      clearInterval(logTimer);
      stopObserving();
    }
    // Not behind what reads reach now: a write read back before the switch is read back after it.
    while (!closed && rebuilding === entry && run.confirmed() < served.confirmed())
      await progress(Date.now() + 1_000);
    if (closed || rebuilding !== entry) {
      await run.close({ snapshot: false });
      throw new RebuildStopped(`the rebuild of ${name} was stopped (closed, or another replica switched)`);
    }
    await switchTo(run);
    const outcome = {
      version: target.version,
      generation: target.generation,
      events: run.applied(),
      ms: Date.now() - started,
    };
    logger.info(
      { ...where, events: outcome.events, ms: outcome.ms },
      "projection rebuilt: reads switched to it",
    );
    return outcome;
  };

  /** Starts a rebuild into `target` (made by then): the one under way from now on. */
  const rebuild = (target: Promise<Generation>, reason: string) => {
    const entry: Rebuilding = { done: Promise.resolve() as unknown as Promise<RebuildOutcome> };
    rebuilding = entry;
    entry.done = startRebuild(entry, target, reason).finally(() => {
      if (rebuilding === entry) rebuilding = undefined;
    });
    return entry.done;
  };

  if (live) {
    // Served once ready, when this run has caught up.
    served = await follow(live, await readModels.getCheckpoint(live.key), "", { unread: true });
    served.takeSnapshots();
  } else if (previous) {
    logger.info(
      { projection: name, version, previousVersion: previous.generation.version },
      "projection version changed: the previous version answers while this one is rebuilt beside it",
    );
    await readModels.serve(definition, previous.generation);
    served = await follow(
      previous.generation,
      previous.position,
      ` (version ${previous.generation.version})`,
    );
    void rebuild(readModels.newGeneration(definition), "version changed").catch((error: unknown) => {
      if (error instanceof RebuildStopped) logger.info({ projection: name }, error.message);
      else logger.error({ err: error, projection: name }, "projection rebuild failed");
    });
  } else {
    const target = await readModels.newGeneration(definition);
    if (readModels.durable || snapshots)
      logger.info({ projection: name, version }, "projection has no checkpoint at this version: rebuilding");
    await readModels.serve(definition, target);
    served = await follow(target, await readModels.getCheckpoint(target.key), "", { unread: true });
    served.takeSnapshots();
  }
  const ready = served.caughtUp;

  // Replicas sharing durable read models: one of them switched reads to another generation.
  let checking = false;
  const checkGeneration = async () => {
    const current = await readModels.liveGeneration(definition, version);
    if (closed || !current || current.key === served.generation.key) return;
    if (rebuilding?.target?.key === current.key) return;
    logger.info(
      { projection: name, version, generation: current.generation },
      "projection generation switched by another replica: following it",
    );
    const superseded = rebuilding;
    rebuilding = undefined;
    await superseded?.run?.close({ snapshot: false });
    await switchTo(await follow(current, await readModels.getCheckpoint(current.key), ""), { drop: false });
  };
  const generationCheck = readModels.durable
    ? setInterval(() => {
        if (checking) return;
        checking = true;
        void checkGeneration()
          .catch((error: unknown) =>
            logger.warn({ err: error, projection: name }, "projection generation not checked"),
          )
          .finally(() => {
            checking = false;
          });
      }, options.generationCheckMs ?? 5_000).unref()
    : undefined;

  // Lag, when scraped: how long ago the oldest event of ours not applied yet was recorded.
  const stopObserving = projectionLag.observe({ projection: name }, async () => {
    const confirmed = served.confirmed();
    const head = await eventStore.headPosition();
    if (confirmed >= head) return 0;
    for await (const event of eventStore.readAll({ after: confirmed, until: head, categories, maxCount: 1 }))
      return Math.max(0, (Date.now() - Date.parse(event.createdAt)) / 1000);
    return 0;
  });

  return {
    ready,
    async catchUp(timeoutMs = 2000) {
      const head = await eventStore.headPosition();
      if (served.confirmed() >= head || head <= verifiedHead) return true;
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // The oldest event of ours not confirmed yet, if any lies before the head.
        let pending: number | undefined;
        for await (const event of eventStore.readAll({
          after: served.confirmed(),
          until: head,
          categories,
          maxCount: 1,
        }))
          pending = event.position;
        if (pending === undefined || served.confirmed() >= head) {
          verifiedHead = Math.max(verifiedHead, head);
          return true;
        }
        while (served.confirmed() < pending) {
          if (Date.now() >= deadline) return false;
          await progress(deadline);
        }
      }
    },
    rebuild() {
      if (rebuilding) return rebuilding.done;
      if (closed) return Promise.reject(new Error(`projection ${name} is closed`));
      return rebuild(readModels.newGeneration(definition, { fresh: true }), "requested");
    },
    async close() {
      closed = true;
      stopObserving();
      clearInterval(generationCheck);
      const stopping = rebuilding;
      rebuilding = undefined;
      await stopping?.run?.close({ snapshot: false });
      await served.close();
      for (const entry of dropping) {
        clearTimeout(entry.timer);
        await entry.drop();
      }
      dropping.clear();
    },
  };
}

/**
 * Loads the projection's snapshot at its version into the read models, as that version's live
 * generation; nothing when there is none, it cannot be used, or it lies past the event store's
 * head (a store that was replaced or emptied since: its events are not those it was made of).
 */
async function restoreSnapshot(
  snapshots: ReadModelSnapshots,
  definition: ProjectionDefinition,
  eventStore: EventStore,
  logger: Logger,
): Promise<void> {
  const projection = definition.name;
  const version = definition.version;
  let restored: Awaited<ReturnType<ReadModelSnapshots["restore"]>>;
  const started = Date.now();
  try {
    restored = await snapshots.restore(definition, { notAfter: await eventStore.headPosition() });
  } catch (error) {
    logger.warn({ err: error, projection, version }, "read models snapshot not read: rebuilding");
    return;
  }
  if ("ignored" in restored) {
    if (restored.ignored !== "none")
      logger.warn(
        { projection, version, reason: restored.ignored },
        "read models snapshot ignored: rebuilding",
      );
    return;
  }
  logger.info(
    { projection, version, position: restored.position, ms: Date.now() - started },
    "read models restored from snapshot",
  );
}
