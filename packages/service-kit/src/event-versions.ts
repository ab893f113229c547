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
   * Turns the data of version `version - 1` into the data of `version`. Pure, and never changes
   * the data it is given (a new object). `event` is the event as stored, for its time or stream.
   */
  upcast: (data: never, event: RecordedEvent) => unknown;
}

/** The versions of a service's event types, from `defineEventVersions`. */
export interface EventVersions {
  /** The version events of `type` are written in now: its last declared step, else 1. */
  current(type: string): number;
  /** `event` in the latest shape of its type; the very same object when it is already. */
  upcast(event: RecordedEvent): RecordedEvent;
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
  return {
    none: chains.size === 0,
    current: (type) => (chains.get(type)?.length ?? 0) + 1,
    upcast(event) {
      const chain = chains.get(event.type);
      // The read path of every event: one map lookup when the event is current.
      if (chain === undefined || event.version > chain.length) return event;
      let data = event.data;
      for (let from = Math.max(event.version, 1); from <= chain.length; from++)
        data = chain[from - 1]!(data, event);
      return { ...event, data, version: chain.length + 1 };
    },
  };
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
    async readStream(streamName, options) {
      const events = await store.readStream(streamName, options);
      for (let i = 0; i < events.length; i++) events[i] = versions.upcast(events[i]!);
      return events;
    },
    async *readAll(options) {
      for await (const event of store.readAll(options)) yield versions.upcast(event);
    },
    headPosition: () => store.headPosition(),
    subscribe(options) {
      const { handler } = options;
      return store.subscribe({ ...options, handler: (event) => handler(versions.upcast(event)) });
    },
    deleteStream: (streamName, options) => store.deleteStream(streamName, options),
    ping: () => store.ping(),
    openReads: () => store.openReads(),
    close: () => store.close(),
  };
}
