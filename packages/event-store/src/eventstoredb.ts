import { randomUUID } from "node:crypto";
import {
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  ANY,
  type AppendExpectedRevision,
  BACKWARDS,
  type RecordedEvent as DbRecordedEvent,
  END,
  EventStoreDBClient,
  type JSONType,
  jsonEvent,
  NO_STREAM,
  type ReadPosition,
  START,
  STREAM_EXISTS,
  StreamDeletedError,
  StreamNotFoundError,
  streamNameFilter,
  WrongExpectedVersionError,
} from "@eventstore/db-client";
import {
  categoryOf,
  type EventMetadata,
  type EventStore,
  type ExpectedRevision,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedRevisionError,
} from "./port.ts";

export interface EventStoreDbOptions {
  /** For example `esdb://localhost:2113?tls=false`. */
  connectionString: string;
}

export function createEventStoreDbStore(options: EventStoreDbOptions): EventStore {
  const client = EventStoreDBClient.connectionString(options.connectionString);
  const subscriptions = new Set<Subscription>();

  async function lastRevision(streamName: string): Promise<number | "no_stream"> {
    try {
      for await (const resolved of client.readStream(streamName, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        if (resolved.event) return Number(resolved.event.revision);
      }
      return "no_stream";
    } catch (error) {
      if (error instanceof StreamNotFoundError) return "no_stream";
      throw error;
    }
  }

  const store: EventStore = {
    async append(streamName, events, { expectedRevision }) {
      const data = events.map((event) =>
        jsonEvent({
          id: event.id ?? randomUUID(),
          type: event.type,
          data: (event.data ?? null) as JSONType,
          metadata: event.metadata ?? {},
        }),
      );
      try {
        const result = await client.appendToStream(streamName, data, {
          expectedRevision: toDbExpected(expectedRevision),
        });
        return {
          nextRevision: Number(result.nextExpectedRevision),
          position: result.position ? Number(result.position.commit) : -1,
        };
      } catch (error) {
        throw mapError(error, streamName, expectedRevision);
      }
    },

    async readStream(streamName, readOptions = {}) {
      const events: RecordedEvent[] = [];
      try {
        const reading = client.readStream(streamName, {
          fromRevision: BigInt(readOptions.fromRevision ?? 0),
          ...(readOptions.maxCount === undefined ? {} : { maxCount: readOptions.maxCount }),
        });
        for await (const resolved of reading) {
          if (resolved.event) events.push(toRecorded(resolved.event));
        }
      } catch (error) {
        // A deleted stream reads as not found too.
        if (error instanceof StreamNotFoundError) return [];
        throw error;
      }
      return events;
    },

    async *readAll(readOptions = {}) {
      const after = readOptions.after;
      let remaining = readOptions.maxCount ?? Number.POSITIVE_INFINITY;
      if (remaining <= 0) return;
      // maxCount is applied here, not by the server: $all also holds system events we skip.
      for await (const resolved of client.readAll({ fromPosition: toReadPosition(after) })) {
        const event = resolved.event;
        if (!event || isSystemEvent(event)) continue;
        const recorded = toRecorded(event);
        // Reading $all from a position includes the event at that position; ours is exclusive.
        if (after !== undefined && recorded.position <= after) continue;
        yield recorded;
        remaining -= 1;
        if (remaining <= 0) return;
      }
    },

    async headPosition() {
      // The newest user event: system events ($stats, projections...) are no concern of ours.
      for await (const resolved of client.readAll({ direction: BACKWARDS, fromPosition: END })) {
        if (resolved.event && !isSystemEvent(resolved.event))
          return Number(resolved.event.position?.commit ?? -1);
      }
      return -1;
    },

    subscribe(subscribeOptions) {
      const subscription = subscribeToCategories(client, subscribeOptions, () => {
        subscriptions.delete(subscription);
      });
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
      try {
        await client.deleteStream(streamName, {
          expectedRevision:
            expected === "any" ? ANY : expected === "no_stream" ? NO_STREAM : BigInt(expected),
        });
      } catch (error) {
        throw mapError(error, streamName, deleteOptions.expectedRevision ?? "any");
      }
    },

    async ping() {
      try {
        for await (const _ of client.readAll({ maxCount: 1, deadline: 2_000 })) break;
        return true;
      } catch {
        return false;
      }
    },

    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.close()));
      await client.dispose();
    },
  };
  return store;
}

/**
 * Catch-up subscription to $all filtered server-side by stream prefix `<category>-`. Events are
 * pulled one at a time with read() so the handler runs strictly one after another, and so we
 * know exactly how many events came before the server's caught-up marker.
 */
function subscribeToCategories(
  client: EventStoreDBClient,
  { categories, after, handler, onCaughtUp, onError }: SubscribeOptions,
  onStopped: () => void,
): Subscription {
  const wanted = new Set(categories);
  let closed = false;
  if (categories.length === 0) {
    queueMicrotask(() => onCaughtUp?.());
    onStopped();
    return { close: async () => {} };
  }
  const stream: AllStreamSubscription = client.subscribeToAll({
    fromPosition: toReadPosition(after),
    filter: streamNameFilter({ prefixes: categories.map((category) => `${category}-`) }),
  });

  let taken = 0;
  let handled = 0;
  let caughtUpAt: number | undefined;
  let caughtUpCalled = false;
  const maybeCaughtUp = () => {
    if (!caughtUpCalled && caughtUpAt !== undefined && handled >= caughtUpAt && !closed) {
      caughtUpCalled = true;
      onCaughtUp?.();
    }
  };
  stream.on("caughtUp", () => {
    // Events already received but not yet handled came before the marker.
    caughtUpAt ??= taken + stream.readableLength;
    maybeCaughtUp();
  });

  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let ended = false;
  const signal = () => wake?.();
  stream.on("readable", signal);
  stream.on("end", () => {
    ended = true;
    signal();
  });
  stream.on("error", (error: Error) => {
    failure = error;
    signal();
  });

  const run = async () => {
    while (!closed) {
      if (failure) throw failure;
      const resolved: AllStreamResolvedEvent | null = stream.read();
      if (resolved === null) {
        if (ended) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
        continue;
      }
      taken += 1;
      const event = resolved.event;
      if (event && !isSystemEvent(event) && wanted.has(categoryOf(event.streamId))) {
        const recorded = toRecorded(event);
        if (after === undefined || recorded.position > after) await handler(recorded);
      }
      handled += 1;
      maybeCaughtUp();
    }
  };

  const done = run()
    .catch((error: unknown) => {
      if (!closed) onError?.(error instanceof Error ? error : new Error(String(error)));
    })
    .finally(async () => {
      closed = true;
      await stream.unsubscribe().catch(() => {});
      onStopped();
    });

  return {
    async close() {
      closed = true;
      wake?.();
      await done;
    },
  };
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
  return error;
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
  const metadata = event.metadata;
  return {
    id: event.id,
    streamName: event.streamId,
    type: event.type,
    data: event.isJson ? event.data : Buffer.from(event.data as Uint8Array).toString("base64"),
    metadata: isPlainObject(metadata) ? (metadata as EventMetadata) : {},
    revision: Number(event.revision),
    position: event.position ? Number(event.position.commit) : -1,
    createdAt: event.created.toISOString(),
  };
}
