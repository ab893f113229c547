import type { EventStore, EventToAppend, RecordedEvent } from "@cheese/event-store";

/**
 * One step in the life of an event type's shape: version `version` of `type`, made from version
 * `version - 1` by `upcast`. Version 1 is the shape an event type was first written in; it needs
 * no declaration.
 */
export interface EventUpcaster {
  type: string;
  /** The version this step makes (2 or more). */
  version: number;
  /**
   * Turns the data of version `version - 1` into the data of `version`, or (a split) into several
   * events, `split(...)`. Pure, and never changes the data it is given (a new object). `event` is
   * the event as stored, for its time or stream.
   */
  upcast: (data: never, event: RecordedEvent) => unknown;
}

/** One of the events a split makes, in version `version` (default 1) of its type's shape. */
export interface SplitPart {
  type: string;
  data: unknown;
  version?: number;
}

const SPLIT: unique symbol = Symbol("split");
interface Split {
  readonly [SPLIT]: readonly SplitPart[];
}

/**
 * What an upcaster returns to read one stored event as several (docs/architecture.md, "Changing
 * an event's shape"): the parts in order, at least one; each is then read through its own type's
 * versions.
 */
export function split(...parts: SplitPart[]): Split {
  if (parts.length === 0) throw new Error("a split makes at least one event");
  return { [SPLIT]: parts };
}

const isSplit = (value: unknown): value is Split =>
  typeof value === "object" && value !== null && SPLIT in value;

/** The versions of a service's event types, from `defineEventVersions`. */
export interface EventVersions {
  /** The version events of `type` are written in now: its last declared step, else 1. */
  current(type: string): number;
  /**
   * `event` in the latest shape of its type (the very same object when it is already), or the
   * events a split reads it as: ids `<id>#1`, `<id>#2`, ... (a single part, a type renamed, keeps
   * the id); revisions rising to the stored one,
   * which the last part keeps (`revision - (n - 1 - i) / n`); the last part keeps the position,
   * the others carry `before`, the position read before it, so no consumer's checkpoint can fall
   * between two parts.
   */
  upcast(event: RecordedEvent, before?: number): RecordedEvent | RecordedEvent[];
  /** True when every type is still at version 1 (nothing to upcast, nothing to stamp). */
  readonly none: boolean;
}

type Step = (data: unknown, event: RecordedEvent) => unknown;

/**
 * A service's one declaration of its event types' versions: every step of every type whose shape
 * has changed. Steps of a type are numbered 2, 3, ... without a gap, each declared once.
 */
export function defineEventVersions(upcasters: readonly EventUpcaster[]): EventVersions {
  const chains = new Map<string, Step[]>();
  for (const { type, version } of upcasters) {
    if (!Number.isInteger(version) || version < 2)
      throw new Error(`event ${type}: an upcaster makes version 2 or later, not ${version}`);
  }
  for (const upcaster of [...upcasters].sort((a, b) => a.version - b.version)) {
    const chain = chains.get(upcaster.type) ?? [];
    // chain[i] makes version i + 2.
    if (upcaster.version !== chain.length + 2)
      throw new Error(
        `event ${upcaster.type}: version ${upcaster.version} declared ${upcaster.version < chain.length + 2 ? "twice" : `without version ${chain.length + 2}`}`,
      );
    chain.push(upcaster.upcast as Step);
    chains.set(upcaster.type, chain);
  }
  const current = (type: string) => (chains.get(type)?.length ?? 0) + 1;
  const upcast = (event: RecordedEvent, before = -1): RecordedEvent | RecordedEvent[] => {
    const chain = chains.get(event.type);
    // The read path of every event: one map lookup when the event is current.
    if (chain === undefined || event.version > chain.length) return event;
    let data = event.data;
    for (let from = Math.max(event.version, 1); from <= chain.length && !isSplit(data); from++)
      data = chain[from - 1]!(data, event);
    if (!isSplit(data)) return { ...event, data, version: chain.length + 1 };
    const parts = data[SPLIT].flatMap((part) => {
      const made = upcast({ ...event, type: part.type, data: part.data, version: part.version ?? 1 });
      return Array.isArray(made) ? made : [made];
    });
    const n = parts.length;
    return parts.map((part, i) => ({
      ...part,
      id: n === 1 ? event.id : `${event.id}#${i + 1}`,
      revision: event.revision - (n - 1 - i) / n,
      position: i === n - 1 ? event.position : before,
    }));
  };
  return { none: chains.size === 0, current, upcast };
}

/**
 * The event store as a service's code sees it: every event read (readStream, readAll,
 * subscriptions) in the latest shape of its type, and every event appended without a version
 * stamped with its type's current one. Deciders, projections, histories, reads as of a moment and
 * the outbox relay all read through it, so none of them meets an older shape. With no type past
 * version 1 it is the store itself.
 */
export function upcasting(store: EventStore, versions: EventVersions): EventStore {
  if (versions.none) return store;
  const stamp = (event: EventToAppend): EventToAppend =>
    event.version === undefined && versions.current(event.type) > 1
      ? { ...event, version: versions.current(event.type) }
      : event;
  return {
    append: (streamName, events, options) => store.append(streamName, events.map(stamp), options),
    appendStreams: (appends) =>
      store.appendStreams(appends.map((append) => ({ ...append, events: append.events.map(stamp) }))),
    async readStream(streamName, options) {
      const events = await store.readStream(streamName, options);
      let split = false;
      const read = events.map((event, i) => {
        const made = versions.upcast(event, i === 0 ? -1 : events[i - 1]!.position);
        split ||= Array.isArray(made);
        return made;
      });
      return split ? read.flat() : (read as RecordedEvent[]);
    },
    // A split event's parts come together, whatever `maxCount` (which counts stored events).
    async *readAll(options) {
      let before = options?.after ?? -1;
      for await (const event of store.readAll(options)) {
        const made = versions.upcast(event, before);
        before = event.position;
        if (Array.isArray(made)) yield* made;
        else yield made;
      }
    },
    headPosition: () => store.headPosition(),
    subscribe(options) {
      const { handler, onCheckpoint } = options;
      // The position last handed on (an event or a checkpoint): a split's first parts carry it.
      let before = options.after ?? -1;
      // Left out only where stored events are read as they are: the store compares stored types.
      const overwrites = options.overwrites?.filter((type) => versions.current(type) === 1);
      return store.subscribe({
        ...options,
        ...(overwrites ? { overwrites } : {}),
        handler: async (event) => {
          const made = versions.upcast(event, before);
          before = event.position;
          if (!Array.isArray(made)) return handler(made);
          for (const part of made) await handler(part);
        },
        ...(onCheckpoint
          ? {
              onCheckpoint: (position: number) => {
                before = Math.max(before, position);
                onCheckpoint(position);
              },
            }
          : {}),
      });
    },
    deleteStream: (streamName, options) => store.deleteStream(streamName, options),
    ping: () => store.ping(),
    openReads: () => store.openReads(),
    close: () => store.close(),
  };
}
