import { type CheeseChangeNotice, cheeseChangeNotices } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import type { MessageBus } from "@cheese/messaging";

const CHEESE_STREAM = /^cheese-(\d+)$/;

/**
 * The catalogue's event store, telling of every change to a cheese: after each append to (or
 * deletion of) a `cheese-<id>` stream, whether it succeeded or not (a failure may still have
 * written), it broadcasts `{ cheeseId }` before the caller goes on, so before the catalogue
 * answers anything that depends on the change. The broadcast goes out on the connection that
 * carries the replies, ahead of them: whoever receives the reply of a write (or anything later)
 * has had the notice sent to it first (see docs/architecture.md, "Change notices").
 */
export function noticingChanges(store: EventStore, bus: MessageBus): EventStore {
  const notify = (streamName: string) => {
    const id = CHEESE_STREAM.exec(streamName)?.[1];
    if (id !== undefined) send(bus, { cheeseId: Number(id) });
  };
  return {
    append: (streamName, events, options) =>
      store.append(streamName, events, options).finally(() => notify(streamName)),
    deleteStream: (streamName, options) =>
      store.deleteStream(streamName, options).finally(() => notify(streamName)),
    readStream: (streamName, options) => store.readStream(streamName, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (options) => store.subscribe(options),
    ping: () => store.ping(),
    openReads: () => store.openReads(),
    close: () => store.close(),
  };
}

/** A replica that starts may have a newer read model than what was cached: everything changed. */
export function noticeEverythingChanged(bus: MessageBus): void {
  send(bus, { all: true });
}

function send(bus: MessageBus, notice: CheeseChangeNotice): void {
  // Fire and forget: a lost notice only costs a cached reply until the cache's own safeguards
  // (a reconnect clears it); the NATS adapter's broadcast does not wait for the server anyway.
  bus.broadcast(cheeseChangeNotices.subject, notice).catch(() => {});
}
