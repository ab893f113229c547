import type { EventStore, RecordedEvent, Subscription } from "@cheese/event-store";
import { type Clock, systemClock, type Timer } from "./clock.ts";
import type { Logger } from "./logger.ts";

/** The first pause before a failed follower subscribes again; each failure in a row doubles it. */
export const FOLLOW_RESTART_MS = 1_000;
/**
 * The longest pause between two attempts to follow the store again: short enough that a service
 * is back within a few seconds of its dependency (the relay's events, a projection's reads).
 */
export const FOLLOW_RESTART_MAX_MS = 4_000;

export interface FollowOptions {
  /** Who follows, in logs: "projection cheeses", "event publisher", "delivery scheduler". */
  name: string;
  eventStore: EventStore;
  categories: string[];
  logger: Logger;
  /** The checkpoint, read at every (re)start: events strictly after it come; undefined is the start. */
  after: () => number | undefined;
  /**
   * Runs before each subscription (the first and every restart); a rejection counts as a failure
   * of that run, so it is tried again after the pause.
   */
  beforeSubscribe?: () => Promise<void>;
  /** One event, in global order; a rejection stops the run and the follower starts again. */
  handle: (event: RecordedEvent) => Promise<void>;
  /**
   * Read at every (re)subscription: event types the store may leave out of that run's catch-up
   * where the next event of their stream writes over them (`SubscribeOptions.overwrites`).
   */
  overwrites?: () => readonly string[];
  /** Everything that existed when this run subscribed has been handled. */
  onCaughtUp?: () => void;
  /** Every event of the categories up to `position` has been handled (see `SubscribeOptions`). */
  onCheckpoint?: (position: number) => void;
  /**
   * Runs once a failed run's subscription is closed, before the pause: work the handler started
   * and has not finished (the relay's publishes under way) settles here.
   */
  afterFailure?: () => Promise<void>;
  /** Times the pause before a restart (infrastructure back-off: real time unless a test injects one). */
  clock?: Clock;
}

export interface Follower {
  /**
   * Stops the current run from outside the handler (work it started has failed since): the
   * subscription is closed, `afterFailure` runs, and the follower starts again after the pause.
   */
  fail(error: unknown): void;
  /**
   * How many runs have failed since the follower started, each counted once it has stopped and
   * its pause has begun (a health signal; tests wait on it before moving an injected clock).
   */
  readonly failures: number;
  /** Stops following: resolves once no handler call is in flight and no restart is pending. */
  close(): Promise<void>;
}

/**
 * The one loop that follows the event store (docs/architecture.md, "Following the store"):
 * subscribes from a checkpoint, hands each event to `handle`, and when a run fails (the handler
 * rejects, the store ends the subscription, `beforeSubscribe` rejects, or `fail` is called)
 * logs it, closes the run, and subscribes again from the checkpoint after a pause of
 * {@link FOLLOW_RESTART_MS}, doubled for each failure in a row up to {@link FOLLOW_RESTART_MAX_MS}
 * and back to the first once a run has caught up. Projections, the outbox relay and the
 * delivery scheduler are all this loop.
 */
export async function followStore(options: FollowOptions): Promise<Follower> {
  const { name, eventStore, categories, logger } = options;
  let subscription: Subscription | undefined;
  let closed = false;
  let failures = 0;
  let inARow = 0;
  let runs = 0;
  /** The run that is starting or subscribed; undefined while a failed one stops or pauses. */
  let live: number | undefined;
  const clock = options.clock ?? systemClock;
  let pause: Timer | undefined;
  let stopping: Promise<void> = Promise.resolve();

  const failRun = (run: number, error: unknown) => {
    if (run !== live || closed) return; // later failures of the same run are the same failure
    live = undefined;
    inARow += 1;
    const delay = Math.min(FOLLOW_RESTART_MS * 2 ** (inARow - 1), FOLLOW_RESTART_MAX_MS);
    logger.error({ err: error, follower: name }, `${name} stopped; restarting in ${delay / 1000}s`);
    const ending = subscription;
    subscription = undefined;
    stopping = (async () => {
      await ending?.close().catch(() => {});
      await options.afterFailure?.().catch(() => {});
      if (closed) return;
      pause = clock.setTimeout(() => {
        pause = undefined;
        void start(false);
      }, delay);
      failures += 1;
    })();
  };

  /** One run; the first one's `beforeSubscribe` failing is the caller's to see, as at any start. */
  const start = async (first: boolean) => {
    if (closed) return;
    const run = ++runs;
    live = run;
    try {
      await options.beforeSubscribe?.();
    } catch (error) {
      if (first) throw error;
      failRun(run, error);
      return;
    }
    if (closed || live !== run) return;
    const after = options.after();
    const overwrites = options.overwrites?.() ?? [];
    subscription = eventStore.subscribe({
      categories,
      ...(after === undefined ? {} : { after }),
      ...(overwrites.length > 0 ? { overwrites } : {}),
      handler: options.handle,
      onCaughtUp: () => {
        if (live !== run) return;
        inARow = 0;
        options.onCaughtUp?.();
      },
      ...(options.onCheckpoint ? { onCheckpoint: options.onCheckpoint } : {}),
      onError: (error) => failRun(run, error),
    });
  };

  await start(true);

  return {
    fail: (error) => {
      if (live !== undefined) failRun(live, error);
    },
    get failures() {
      return failures;
    },
    async close() {
      closed = true;
      pause?.cancel();
      await stopping;
      await subscription?.close();
    },
  };
}
