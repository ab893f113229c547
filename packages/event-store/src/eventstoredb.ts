import { randomUUID } from "node:crypto";
import {
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  ANY,
  type AppendExpectedRevision,
  BACKWARDS,
  CancelledError,
  convertToCommandError,
  type RecordedEvent as DbRecordedEvent,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  type JSONType,
  jsonEvent,
  NO_STREAM,
  NotLeaderError,
  type Position,
  type ReadPosition,
  START,
  STREAM_EXISTS,
  StreamDeletedError,
  type StreamingRead,
  StreamNotFoundError,
  streamNameFilter,
  TimeoutError,
  UnavailableError,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import { clientConnectionString, EVENT_STORE_SCHEMES } from "./connection-string.ts";
import {
  categoryOf,
  type EventMetadata,
  type EventStore,
  EventStoreUnavailableError,
  type ExpectedRevision,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevisionError,
} from "./port.ts";

export interface EventStoreDbOptions {
  /**
   * For example `kurrentdb://localhost:2113?tls=false` (or `esdb://…`), or with credentials and a
   * CA (see docs/operations.md).
   */
  connectionString: string;
  /** How long ping() waits for the server before answering false. Default 2 s. */
  pingTimeoutMs?: number;
  /** Longest pause before resuming a subscription the server ended; the first resume is at once. */
  resumeDelayMaxMs?: number;
  /**
   * Deadline of each call (an append, a delete, one read call: a page of $all, a stream); past it
   * the call is cancelled and fails with EventStoreUnavailableError. Default: the client's 10 s
   * for appends and deletes, none for reads. Services set it under their RPC deadline.
   */
  deadlineMs?: number;
}

/**
 * $all is read in pages so that every call ends by itself (the server's maxCount), starting small
 * (a catch-up scans a few events) and growing for long reads.
 */
const FIRST_PAGE = 32;
const LARGEST_PAGE = 4_096;
/**
 * A filtered subscription gets a checkpoint from the server after every this many events of $all
 * (ours or not): the server's search window times the checkpoint interval multiplier (1).
 */
export const CHECKPOINT_EVERY = 32;
/**
 * The metadata field that holds an event's schema version (`EventToAppend.version`): EventStoreDB
 * events have no place of their own for it. Taken out of the metadata when read.
 */
const VERSION_KEY = "schemaVersion";
/** soft delete sets truncate-before to long.MaxValue, which JSON turns into ~9.2e18. */
const DELETED = Number.MAX_SAFE_INTEGER;

/**
 * The EventStoreDB adapter, on the official gRPC client. Things the client leaves to its caller,
 * each handled here (docs/operations.md lists how each was verified):
 * - A read whose consumer stops early must be cancelled, or its HTTP/2 stream stays open (the
 *   server allows ~100 per connection); every read goes through `track()`.
 * - Read calls carry `deadline: Infinity`, which overrides any deadline passed in: each read
 *   call gets a timer of ours instead (`deadlineMs`; ping() its own), which cancels it.
 * - Soft delete only sets truncate-before: $all and subscriptions still carry the deleted
 *   events until a scavenge, so both skip them here (see `Deletions`).
 * - A subscription the server ends cleanly (OK status) just ends; it is resumed here.
 * - The client reconnects after `NotLeaderError` (to the leader the error names),
 *   `UnavailableError` and `CancelledError`, but fails the call in flight: a call safe to repeat
 *   is retried once after a not-leader answer (`attempt`), and every transient failure (those,
 *   deadlines) becomes `EventStoreUnavailableError` (503), never an unnamed error (500).
 */
export function createEventStoreDbStore(options: EventStoreDbOptions): EventStore {
  const connectionString = clientConnectionString(options.connectionString);
  if (!connectionString)
    throw new Error(`an event store connection string starts with ${EVENT_STORE_SCHEMES}`);
  const client = EventStoreDBClient.connectionString(connectionString);
  const pingTimeoutMs = options.pingTimeoutMs ?? 2_000;
  const deadlineMs = options.deadlineMs;
  const writeDeadline = deadlineMs === undefined ? {} : { deadline: deadlineMs };
  const subscriptions = new Set<Subscription>();
  let openReads = 0;

  /**
   * Iterates one read call and ends it, whatever way the iteration stops: the client ends the
   * call only on cancel(); breaking out of the iteration just destroys the Node stream on top.
   * With a timeout, a call the server does not finish in time is cancelled and rejects.
   */
  async function* track<T>(reading: StreamingRead<T>, timeoutMs?: number): AsyncGenerator<T> {
    openReads += 1;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            void reading
              .cancel()
              .catch(() => {})
              .finally(() =>
                reading.destroy(
                  new EventStoreUnavailableError(`EventStoreDB did not answer within ${timeoutMs} ms`),
                ),
              );
          }, timeoutMs);
    try {
      yield* reading;
    } finally {
      clearTimeout(timer);
      // Harmless on a call that already ended; required on one that did not.
      await reading.cancel().catch(() => {});
      reading.destroy();
      openReads -= 1;
    }
  }

  /** The events one read call returns, whole: a call is repeated as a unit (see `attempt`). */
  async function readCall(
    open: () => StreamingRead<{ event?: DbRecordedEvent }>,
  ): Promise<DbRecordedEvent[]> {
    // Reads are always safe to repeat.
    return attempt(true, async () => {
      const events: DbRecordedEvent[] = [];
      for await (const resolved of track(open(), deadlineMs)) if (resolved.event) events.push(resolved.event);
      return events;
    });
  }

  async function lastRevision(streamName: string): Promise<number | "no_stream"> {
    try {
      const [last] = await readCall(() =>
        client.readStream(streamName, { direction: BACKWARDS, fromRevision: END, maxCount: 1 }),
      );
      return last ? Number(last.revision) : "no_stream";
    } catch (error) {
      if (error instanceof StreamNotFoundError) return "no_stream";
      throw error;
    }
  }

  /** The newest metadata of a stream, as a deletion mark (undefined when it has none). */
  async function deletionOf(streamName: string): Promise<DeletionMark | undefined> {
    try {
      const [newest] = await readCall(() =>
        client.readStream(`$$${streamName}`, { direction: BACKWARDS, fromRevision: END, maxCount: 1 }),
      );
      return newest ? deletionMark(newest) : undefined;
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      throw error;
    }
  }

  /** Pages of $all after `from` (exclusive), system events included, each page one finished call. */
  async function* pagesOfAll(from: number | undefined, direction: "forwards" | "backwards") {
    let cursor = from;
    let size = FIRST_PAGE;
    for (;;) {
      const from = cursor;
      const page = await readCall(() =>
        client.readAll({
          direction: direction === "forwards" ? "forwards" : BACKWARDS,
          fromPosition: from === undefined ? (direction === "forwards" ? START : END) : toReadPosition(from),
          maxCount: size,
        }),
      );
      // Reading from a position includes the event there; ours is exclusive.
      const fresh = page.filter(
        (event) =>
          cursor === undefined ||
          (direction === "forwards" ? positionOf(event) > cursor : positionOf(event) < cursor),
      );
      yield fresh;
      if (page.length < size || fresh.length === 0) return;
      cursor = positionOf(page[page.length - 1]!);
      size = Math.min(size * 2, LARGEST_PAGE);
    }
  }

  const store: EventStore = {
    async append(streamName, events, { expectedRevision }) {
      const data = events.map((event) =>
        jsonEvent({
          id: event.id ?? randomUUID(),
          type: event.type,
          data: (event.data ?? null) as JSONType,
          metadata: { ...event.metadata, [VERSION_KEY]: event.version ?? 1 },
        }),
      );
      try {
        // Retried after a not-leader answer only with an exact expectation (a revision, or
        // no_stream): should the first try have been written after all, the second is refused
        // (WrongExpectedRevisionError, which the command handler resolves by reading again), so it
        // is never written twice. With "any" or "stream_exists" it could be: not retried.
        const exact = typeof expectedRevision === "number" || expectedRevision === "no_stream";
        const result = await attempt(exact, () =>
          client.appendToStream(streamName, data, {
            expectedRevision: toDbExpected(expectedRevision),
            ...writeDeadline,
          }),
        );
        return {
          nextRevision: Number(result.nextExpectedRevision),
          position: result.position ? Number(result.position.commit) : -1,
        };
      } catch (error) {
        throw mapError(error, streamName, expectedRevision);
      }
    },

    // Not atomic: the official client this adapter is on (@eventstore/db-client 6) appends one
    // stream per call. Each stream is appended in turn with its own expectation; the first that
    // fails stops the rest, and the streams before it stay written. (KurrentDB 25.1 has an atomic
    // multi-stream append, reached only through the successor client, @kurrent/kurrentdb-client.)
    async appendStreams(appends) {
      if (new Set(appends.map((append) => append.streamName)).size !== appends.length)
        throw new Error("appendStreams names each stream once");
      const results = [];
      for (const { streamName, events, expectedRevision } of appends)
        results.push(await store.append(streamName, events, { expectedRevision }));
      return results;
    },

    async readStream(streamName, readOptions = {}) {
      try {
        // The server applies truncate-before here, so a deleted stream's events never come back.
        const events = await readCall(() =>
          client.readStream(streamName, {
            fromRevision: BigInt(readOptions.fromRevision ?? 0),
            ...(readOptions.maxCount === undefined ? {} : { maxCount: readOptions.maxCount }),
          }),
        );
        return events.map(toRecorded);
      } catch (error) {
        // A deleted stream reads as not found too.
        if (error instanceof StreamNotFoundError) return [];
        throw error;
      }
    },

    async *readAll(readOptions = {}) {
      const { after, categories } = readOptions;
      const until = readOptions.until ?? Number.POSITIVE_INFINITY;
      const wanted = categories ? new Set(categories) : undefined;
      let remaining = readOptions.maxCount ?? Number.POSITIVE_INFINITY;
      if (remaining <= 0 || wanted?.size === 0) return;
      // Deletion marks as they are now, looked up once per stream met (see `Deletions`).
      const marks = new Map<string, Promise<DeletionMark | undefined>>();
      for await (const page of pagesOfAll(after !== undefined && after < 0 ? undefined : after, "forwards")) {
        for (const event of page) {
          const position = positionOf(event);
          if (position > until) return;
          if (isSystemEvent(event) || (wanted && !wanted.has(categoryOf(event.streamId)))) continue;
          let mark = marks.get(event.streamId);
          if (!mark) {
            mark = deletionOf(event.streamId);
            marks.set(event.streamId, mark);
          }
          if (hides(await mark, event)) continue;
          yield toRecorded(event);
          remaining -= 1;
          if (remaining <= 0) return;
        }
      }
    },

    async headPosition() {
      // The newest user event: system events ($stats, projections' links...) are no concern of ours.
      for await (const page of pagesOfAll(undefined, "backwards")) {
        const newest = page.find((event) => !isSystemEvent(event));
        if (newest) return positionOf(newest);
      }
      return -1;
    },

    subscribe(subscribeOptions) {
      const subscription = subscribeToCategories(
        client,
        subscribeOptions,
        options.resumeDelayMaxMs ?? 5_000,
        () => {
          subscriptions.delete(subscription);
        },
      );
      subscriptions.add(subscription);
      return subscription;
    },

    async deleteStream(streamName, deleteOptions = {}) {
      let expected = deleteOptions.expectedRevision ?? "any";
      if (expected === "stream_exists") {
        // The client cannot send "stream exists" for deletes; delete at the revision we read instead,
        // which fails if the stream moves meanwhile.
        const actual = await lastRevision(streamName);
        if (actual === "no_stream") throw new WrongExpectedRevisionError(streamName, "stream_exists", actual);
        expected = actual;
      }
      const revision = expected;
      try {
        // As appends: retried only with an exact expectation, which a second delete cannot pass.
        await attempt(typeof revision === "number", () =>
          client.deleteStream(streamName, {
            expectedRevision:
              revision === "any" ? ANY : revision === "no_stream" ? NO_STREAM : BigInt(revision),
            ...writeDeadline,
          }),
        );
      } catch (error) {
        throw mapError(error, streamName, deleteOptions.expectedRevision ?? "any");
      }
    },

    async ping() {
      try {
        const reading = client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 });
        for await (const _ of track(reading, pingTimeoutMs)) {
          // One event or none: either way the server answered.
        }
        return true;
      } catch {
        return false;
      }
    },

    openReads: () => openReads,

    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.close()));
      await client.dispose();
    },
  };
  return store;
}

/**
 * Where a stream's deletion leaves its events, from its newest `$metadata` event (in `$$stream`).
 * Soft delete writes truncate-before = long.MaxValue; the next append to the stream makes the
 * server write truncate-before = first new revision, after the new events. So: with the maximum,
 * every event older than the mark is gone; otherwise every revision below it.
 */
interface DeletionMark {
  truncateBefore: number;
  position: number;
}

function deletionMark(event: DbRecordedEvent): DeletionMark {
  let data: unknown = event.data;
  if (data instanceof Uint8Array) {
    try {
      data = JSON.parse(Buffer.from(data).toString("utf8"));
    } catch {
      data = undefined;
    }
  }
  const tb = (data as { $tb?: unknown } | undefined)?.$tb;
  return { truncateBefore: typeof tb === "number" ? tb : 0, position: positionOf(event) };
}

function hides(mark: DeletionMark | undefined, event: DbRecordedEvent): boolean {
  if (!mark) return false;
  if (mark.truncateBefore >= DELETED) return positionOf(event) < mark.position;
  return Number(event.revision) < mark.truncateBefore;
}

const isMetadataEvent = (event: DbRecordedEvent) =>
  event.streamId.startsWith("$$") && event.type === "$metadata";

/** Which of `categories`' streams are deleted, as seen from $all after `from`. */
class Deletions {
  private readonly marks = new Map<string, DeletionMark>();

  /** Keeps the newer of what it knew and `event`, a `$metadata` event of `$$<stream>`. */
  note(event: DbRecordedEvent): void {
    const stream = event.streamId.slice(2);
    const mark = deletionMark(event);
    const known = this.marks.get(stream);
    if (!known || known.position < mark.position) this.marks.set(stream, mark);
  }

  hides(event: DbRecordedEvent): boolean {
    return hides(this.marks.get(event.streamId), event);
  }
}

type FeedItem =
  | { kind: "event"; event: DbRecordedEvent }
  | { kind: "caughtUp" }
  | { kind: "checkpoint"; position: number }
  | { kind: "end" };

/**
 * One subscription call as a sequence of items in the order the server sent them: events, the
 * caught-up marker, checkpoints, then "end" if the server closes the call cleanly. Errors throw.
 */
function openFeed(
  client: EventStoreDBClient,
  from: number | undefined,
  prefixes: string[],
): { next(): Promise<FeedItem>; close(): Promise<void> } {
  let taken = 0;
  // Markers come as callbacks while the events before them may still sit in the stream's buffer:
  // each is queued with the number of events that precede it.
  const markers: Array<{ at: number; item: FeedItem }> = [];
  const mark = (item: FeedItem) => {
    markers.push({ at: taken + stream.readableLength, item });
    wake?.();
  };
  const stream: AllStreamSubscription = client.subscribeToAll({
    fromPosition: toReadPosition(from),
    filter: streamNameFilter({
      prefixes,
      maxSearchWindow: CHECKPOINT_EVERY,
      checkpointInterval: 1,
      checkpointReached: (_subscription: AllStreamSubscription, position: Position) =>
        mark({ kind: "checkpoint", position: Number(position.commit) }),
    }),
  });
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let ended = false;
  const signal = () => wake?.();
  stream.on("caughtUp", () => mark({ kind: "caughtUp" }));
  stream.on("readable", signal);
  stream.on("end", () => {
    ended = true;
    signal();
  });
  stream.on("error", (error: Error) => {
    failure = error;
    signal();
  });
  let closed = false;
  return {
    async next() {
      for (;;) {
        if (closed) return { kind: "end" };
        if (markers.length > 0 && markers[0]!.at <= taken) return markers.shift()!.item;
        if (failure) throw failure;
        const resolved: AllStreamResolvedEvent | null = stream.read();
        if (resolved !== null) {
          taken += 1;
          if (resolved.event) return { kind: "event", event: resolved.event };
          continue;
        }
        if (ended) return { kind: "end" };
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    },
    async close() {
      closed = true;
      wake?.();
      await stream.unsubscribe().catch(() => {});
      stream.destroy();
    },
  };
}

/**
 * Catch-up subscription to $all filtered server-side to the streams `<category>-*` and their
 * metadata streams `$$<category>-*`. Before it starts, a first pass over the same range collects
 * the deletions (metadata events) that lie ahead, so events of streams deleted later are not
 * delivered; metadata events met on the way keep that knowledge current. Events are pulled one at
 * a time so the handler runs strictly one after another. When the server ends the call cleanly,
 * the subscription resumes from the last position it passed.
 */
function subscribeToCategories(
  client: EventStoreDBClient,
  { categories, after, handler, onCaughtUp, onCheckpoint, onError }: SubscribeOptions,
  resumeDelayMaxMs: number,
  onStopped: () => void,
): Subscription {
  const wanted = new Set(categories);
  let closed = false;
  if (categories.length === 0) {
    queueMicrotask(() => onCaughtUp?.());
    onStopped();
    return { close: async () => {} };
  }
  const prefixes = categories.flatMap((category) => [`${category}-`, `$$${category}-`]);
  const deletions = new Deletions();
  let feed: ReturnType<typeof openFeed> | undefined;
  let wakeFromPause: (() => void) | undefined;
  /** The last position passed: delivered, skipped or checkpointed. Resuming starts after it. */
  let passed = after !== undefined && after >= 0 ? after : undefined;
  let checkpointed = passed ?? -1;
  let caughtUpCalled = false;

  const checkpoint = (position: number) => {
    if (position > checkpointed) {
      checkpointed = position;
      onCheckpoint?.(position);
    }
  };

  /** Reads the deletions ahead of `from`, up to where the server is now. */
  const scanDeletions = async (from: number | undefined) => {
    const scan = openFeed(
      client,
      from,
      categories.map((category) => `$$${category}-`),
    );
    feed = scan;
    try {
      for (;;) {
        const item = await scan.next();
        if (item.kind === "caughtUp" || item.kind === "end" || closed) return;
        if (item.kind === "event" && isMetadataEvent(item.event)) deletions.note(item.event);
      }
    } finally {
      await scan.close();
    }
  };

  const session = async (): Promise<boolean> => {
    feed = openFeed(client, passed, prefixes);
    let progressed = false;
    for (;;) {
      const item = await feed.next();
      if (closed) return progressed;
      switch (item.kind) {
        case "end":
          return progressed;
        case "caughtUp":
          if (!caughtUpCalled) {
            caughtUpCalled = true;
            onCaughtUp?.();
          }
          break;
        case "checkpoint":
          progressed = true;
          if (passed === undefined || item.position > passed) passed = item.position;
          checkpoint(item.position);
          break;
        case "event": {
          progressed = true;
          const { event } = item;
          const position = positionOf(event);
          if (passed !== undefined && position <= passed) break;
          if (isMetadataEvent(event)) {
            deletions.note(event);
          } else if (!isSystemEvent(event) && wanted.has(categoryOf(event.streamId))) {
            if (deletions.hides(event)) {
              passed = position;
              checkpoint(position);
              break;
            }
            await handler(toRecorded(event));
          }
          passed = position;
          break;
        }
      }
    }
  };

  const run = async () => {
    await scanDeletions(passed);
    let pause = 0;
    while (!closed) {
      const progressed = await session();
      await feed?.close();
      if (closed) return;
      // Ended by the server: resume at once, then back off while resumed calls end empty.
      pause = progressed ? 0 : Math.min(resumeDelayMaxMs, Math.max(100, pause * 2));
      if (pause > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pause);
          wakeFromPause = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wakeFromPause = undefined;
      }
    }
  };

  const done = run()
    .catch((error: unknown) => {
      if (!closed) onError?.(error instanceof Error ? error : new Error(String(error)));
    })
    .finally(async () => {
      closed = true;
      await feed?.close();
      onStopped();
    });

  return {
    async close() {
      closed = true;
      wakeFromPause?.();
      await feed?.close();
      await done;
    },
  };
}

/**
 * Runs one call. After a not-leader answer the client has switched to the leader the answer named
 * (or will at its next call), so a call safe to repeat (`safe`) is tried once more there. What
 * still fails because the server cannot answer now becomes {@link EventStoreUnavailableError}.
 */
async function attempt<T>(safe: boolean, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (!safe || !(toCommandError(error) instanceof NotLeaderError)) throw asUnavailable(error);
  }
  // The client drops its channel to the old leader in a callback of the failed call: let it run.
  await new Promise<void>((resolve) => setImmediate(resolve));
  try {
    return await call();
  } catch (error) {
    throw asUnavailable(error);
  }
}

const toCommandError = (error: unknown): unknown =>
  error instanceof Error ? convertToCommandError(error) : error;

/** The server out of reach, failing over, cancelling, or past a deadline: transient, a 503. */
function asUnavailable(error: unknown): unknown {
  const converted = toCommandError(error);
  const transient =
    converted instanceof UnavailableError ||
    converted instanceof NotLeaderError ||
    converted instanceof CancelledError ||
    converted instanceof DeadlineExceededError ||
    converted instanceof TimeoutError;
  if (!transient) return converted;
  return new EventStoreUnavailableError(`EventStoreDB unavailable: ${(converted as Error).message}`, {
    cause: error,
  });
}

function toDbExpected(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === "any") return ANY;
  if (expected === "no_stream") return NO_STREAM;
  if (expected === "stream_exists") return STREAM_EXISTS;
  return BigInt(expected);
}

function toReadPosition(after: number | undefined): ReadPosition {
  // -1 is the head of an empty store: callers may pass it straight back as a checkpoint.
  if (after === undefined || after < 0) return START;
  // Since 20.x a single-stream append has equal commit and prepare positions.
  return { commit: BigInt(after), prepare: BigInt(after) };
}

function positionOf(event: DbRecordedEvent): number {
  return event.position ? Number(event.position.commit) : -1;
}

function mapError(error: unknown, streamName: string, expected: ExpectedRevision): unknown {
  if (error instanceof WrongExpectedVersionError) {
    // Some server paths report a missing stream as revision -1 rather than leaving it out.
    const actual =
      error.actualVersion === "no_stream" || error.actualVersion < 0n
        ? "no_stream"
        : Number(error.actualVersion);
    return new WrongExpectedRevisionError(streamName, expected, actual);
  }
  // "stream_exists" on a soft-deleted stream answers StreamDeleted: for us the stream does not exist.
  if (error instanceof StreamDeletedError)
    return new WrongExpectedRevisionError(streamName, expected, "no_stream");
  return asUnavailable(error);
}

function isPlainObject(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)
  );
}

function isSystemEvent(event: DbRecordedEvent): boolean {
  return event.streamId.startsWith("$") || event.type.startsWith("$");
}

function toRecorded(event: DbRecordedEvent): RecordedEvent {
  let metadata: EventMetadata = isPlainObject(event.metadata) ? (event.metadata as EventMetadata) : {};
  let version = 1;
  if (VERSION_KEY in metadata) {
    const { [VERSION_KEY]: stored, ...rest } = metadata;
    if (typeof stored === "number" && Number.isInteger(stored) && stored > 0) version = stored;
    metadata = rest;
  }
  return {
    id: event.id,
    streamName: event.streamId,
    type: event.type,
    data: event.isJson ? event.data : Buffer.from(event.data as Uint8Array).toString("base64"),
    metadata,
    version,
    revision: Number(event.revision),
    position: positionOf(event),
    createdAt: event.created.toISOString(),
  };
}
