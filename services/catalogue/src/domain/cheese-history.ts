import type { CheeseHistoryEntry, HistoryChange } from "@cheese/contracts";
import type { CheeseEvent } from "./cheese.ts";

/**
 * What a cheese's history shows of each of its events: the cheese as it became, a status move,
 * an image's public URLs. Blob keys stay inside. Pure: the time is the event's, added by the caller.
 */
export function cheeseHistoryEntry(event: CheeseEvent): HistoryChange<CheeseHistoryEntry> {
  switch (event.type) {
    case "CheeseAdded":
      return { type: "cheese.added", data: event.data.cheese };
    case "CheeseUpdated":
      return { type: "cheese.updated", data: event.data.cheese };
    case "CheeseStatusChanged":
      return { type: "cheese.status_changed", data: { from: event.data.from, to: event.data.to } };
    case "CheeseImageAttached": {
      const { imageUrl, thumbnailUrl, caption, isPrimary, width, height, contentType, size } =
        event.data.image;
      return {
        type: "cheese.image_attached",
        data: { imageUrl, thumbnailUrl, caption, isPrimary, width, height, contentType, size },
      };
    }
    case "CheeseDeleted":
      return { type: "cheese.deleted", data: {} };
  }
}
