import { type CheeseChangeNotice, cheeseChangeNotices } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import type { MessageBus } from "@cheese/messaging";

const CHEESE_STREAM = /^cheese-(\d+)$/;

/**
 * The catalogue's event store, telling of every change to a cheese: after each append to (or
 * deletion of) a `cheese-<id>` stream (or to several streams, for each such one), whether it
 * succeeded or not (a failure may still have written), it announces `{ cheeseId }` on the notice
 * channel and waits until the bus has stored it and every gateway holding a read lease has
 * applied it (or its lease ran out), so before the catalogue answers anything that depends on the
 * change: a gateway that holds its lease has it, and one that does not takes a barrier that covers
 * it (see docs/architecture.md, "Change notices"). A successful write whose notice cannot be
 * stored fails with the bus's 503: answering it would break that promise.
 */
export function noticingChanges(store: EventStore, bus: MessageBus): EventStore {
  const notified = async <T>(streamNames: string[], write: Promise<T>): Promise<T> => {
    const ids = streamNames.flatMap((streamName) => CHEESE_STREAM.exec(streamName)?.[1] ?? []);
    if (ids.length === 0) return write;
    const announceAll = () => Promise.all(ids.map((id) => announce(bus, { cheeseId: Number(id) })));
    let result: T;
    try {
      result = await write;
    } catch (error) {
      // Told anyway, as far as it can be; the write's own failure is what the caller hears.
      await announceAll().catch(() => {});
      throw error;
    }
    await announceAll();
    return result;
  };
  return {
    append: (streamName, events, options) =>
      notified([streamName], store.append(streamName, events, options)),
    appendStreams: (appends) =>
      notified(
        appends.map((append) => append.streamName),
        store.appendStreams(appends),
      ),
    deleteStream: (streamName, options) => notified([streamName], store.deleteStream(streamName, options)),
    readStream: (streamName, options) => store.readStream(streamName, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (options) => store.subscribe(options),
    ping: () => store.ping(),
    openReads: () => store.openReads(),
    close: () => store.close(),
  };
}

/**
 * A replica that starts may have a newer read model than what was cached, and one whose
 * connection came back may have failed a write after its append: everything changed. Not
 * waited for by anyone; a notice that cannot be stored leaves the caches' own bound
 * (`READ_CACHE_MAX_AGE`).
 */
export function noticeEverythingChanged(bus: MessageBus): void {
  announce(bus, { all: true }).catch(() => {});
}

function announce(bus: MessageBus, notice: CheeseChangeNotice): Promise<void> {
  return bus.announce(cheeseChangeNotices.channel, notice);
}
