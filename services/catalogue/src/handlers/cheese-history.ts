import type { CheeseHistoryEntry } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { type HistoryPage, notFound, readHistory } from "@cheese/service-kit";
import { type CheeseEvent, cheeseStream } from "../domain/cheese.ts";
import { cheeseHistoryEntry } from "../domain/cheese-history.ts";

/** GET /cheeses/{cheeseId}/history: the cheese's events, oldest first, deleted cheeses included. */
export async function cheeseHistory(
  store: EventStore,
  request: { cheeseId: number; cursor?: string | undefined; limit: number },
): Promise<HistoryPage<CheeseHistoryEntry>> {
  const stream = cheeseStream(request.cheeseId);
  const [first] = await store.readStream(stream, { maxCount: 1 });
  if (!first) throw notFound(`cheese ${request.cheeseId} not found`);
  return readHistory(store, stream, request, (event) => ({
    ...cheeseHistoryEntry({ type: event.type, data: event.data } as CheeseEvent),
    at: event.createdAt,
  }));
}
