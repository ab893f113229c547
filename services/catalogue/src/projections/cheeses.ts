import type { Cheese } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { Document, ReadModelStore } from "@cheese/read-models";
import type { CheeseEvent } from "../domain/cheese.ts";

/** The `cheeses` read model: one document per cheese, `_id` = cheese id. */
export interface CheeseDocument extends Document {
  _id: number;
  cheese: Cheese;
  /** Lower-cased name, for case-insensitive sorting. */
  sortName: string;
}

export const CHEESES = "cheeses";

export async function projectCheese(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const cheeses = readModels.collection<CheeseDocument>(CHEESES);
  const domainEvent = { type: event.type, data: event.data } as CheeseEvent;
  switch (domainEvent.type) {
    case "CheeseAdded": {
      const { cheese } = domainEvent.data;
      await cheeses.upsert(cheese.id, event.revision, {
        $set: { cheese, sortName: cheese.name.toLowerCase() },
      });
      return;
    }
  }
}
