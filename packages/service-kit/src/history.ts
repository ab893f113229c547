import type { EventStore, RecordedEvent } from "@cheese/event-store";
import { z } from "zod";
import { decodeCursor, encodeCursor } from "./cursor.ts";

/** A page of an aggregate's history: entries (`{type, at, data}`), oldest first. */
export interface HistoryPage<Entry> {
  items: Entry[];
  nextCursor: string | null;
  hasMore: boolean;
}

/** What a service shows of one stored event: an entry, or undefined to leave it out. */
export type HistoryView<Entry> = (event: RecordedEvent) => Entry | undefined | Promise<Entry | undefined>;

/**
 * A history cursor: the stream revision of the last entry given (between two whole numbers for a
 * part of a split event but the last, docs/architecture.md "Changing an event's shape").
 */
const HistoryPosition = z.object({ r: z.number().gt(-1).max(Number.MAX_SAFE_INTEGER) });

/**
 * A page of one stream's history, oldest first, with the cursor convention of every list
 * (`limit`, opaque `cursor`, answer `{items, nextCursor, hasMore}`). The cursor is the stream
 * revision of the page's last entry, so appends never shift pages. Events `view` leaves out
 * (internal bookkeeping) are skipped without shortening a page.
 */
export async function readHistory<Entry>(
  store: EventStore,
  streamName: string,
  page: { cursor?: string | undefined; limit: number },
  view: HistoryView<Entry>,
): Promise<HistoryPage<Entry>> {
  const after = page.cursor === undefined ? -1 : decodeCursor(page.cursor, HistoryPosition).r;
  // A stored event's parts are read together: the page goes on after the part it ended with.
  let from = Math.floor(after) + 1;
  const found: { entry: Entry; revision: number }[] = [];
  const batch = Math.min(500, page.limit + 1);
  while (found.length <= page.limit) {
    const events = await store.readStream(streamName, { fromRevision: from, maxCount: batch });
    for (const event of events) {
      if (event.revision <= after) continue;
      const entry = await view(event);
      if (entry) found.push({ entry, revision: event.revision });
      if (found.length > page.limit) break;
    }
    if (events.length < batch) break;
    from = Math.floor(events[events.length - 1]!.revision) + 1;
  }
  const hasMore = found.length > page.limit;
  const items = found.slice(0, page.limit);
  const last = items[items.length - 1];
  return {
    items: items.map((item) => item.entry),
    nextCursor: hasMore && last ? encodeCursor({ r: last.revision }) : null,
    hasMore,
  };
}
