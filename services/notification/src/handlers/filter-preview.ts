import { type FilterPreview, type WebhookEventKind, webhookEventKinds } from "@cheese/contracts";
import type { RecordedWebhookEvent } from "../domain/event-mapping.ts";
import { checkFilter } from "../domain/filter.ts";
import type { NotificationDeps } from "./deps.ts";

/** How many global positions the first look back spans; each further look spans twice the last. */
const FIRST_WINDOW = 1024;

/**
 * How a filter would have judged the most recent recorded webhook events of `events` (every kind
 * when absent), newest first, at most `limit`: the events this service recorded because some
 * registration wanted their kind, whether or not a filter then kept them from it. A filter that
 * does not parse or type-check is 422 naming `filter`, as at registration.
 */
export async function previewFilter(
  deps: NotificationDeps,
  request: { filter: string; events?: WebhookEventKind[] | undefined; limit: number },
): Promise<FilterPreview> {
  const kinds = request.events ? [...new Set(request.events)] : [...webhookEventKinds];
  const filter = checkFilter(request.filter, kinds);
  const recent = await recentEvents(deps, new Set(kinds), request.limit);
  const items = recent.map((event) => {
    const { data } = JSON.parse(event.body) as { data: unknown };
    const { matched } = filter({ type: event.type, created_at: event.createdAt, data });
    return { id: event.eventId, type: event.type, created_at: event.createdAt, matched };
  });
  return { matched: items.filter((item) => item.matched).length, total: items.length, items };
}

/**
 * The newest `limit` recorded events of `kinds`, newest first. The store reads forwards only, so
 * this looks back in windows of global positions, each twice the last, until it has enough or
 * reaches the start.
 */
async function recentEvents(
  deps: NotificationDeps,
  kinds: Set<WebhookEventKind>,
  limit: number,
): Promise<RecordedWebhookEvent[]> {
  const found: RecordedWebhookEvent[] = [];
  let until = await deps.store.headPosition();
  let window = FIRST_WINDOW;
  while (until >= 0 && found.length < limit) {
    const after = Math.max(-1, until - window);
    const inWindow: RecordedWebhookEvent[] = [];
    for await (const event of deps.store.readAll({
      categories: ["webhookevent"],
      ...(after >= 0 ? { after } : {}),
      until,
    })) {
      const recorded = event.data as RecordedWebhookEvent;
      if (event.type === "WebhookEventRecorded" && kinds.has(recorded.type)) inWindow.push(recorded);
    }
    found.push(...inWindow.reverse());
    until = after;
    window *= 2;
  }
  return found.slice(0, limit);
}
