import type { Cheese, CheeseStatus } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { CollectionDefinition, Document, ReadModelStore } from "@cheese/read-models";
import type { ProjectionOptions } from "@cheese/service-kit";
import { type CheeseEvent, normaliseName, type StoredImage } from "../domain/cheese.ts";

/**
 * The `cheeses` read model: one document per cheese, `_id` = cheese id, `_revision` = stream
 * revision (the ETag). Beside the cheese it holds the fields lists filter and sort on, and the
 * cheese's images. Inventory counts are a group-by over `status`.
 */
export interface CheeseDocument extends Document {
  _id: number;
  cheese: Cheese;
  images: StoredImage[];
  /** Lower-cased name, for case-insensitive sorting. */
  sortName: string;
  createdAt: string;
  status: CheeseStatus;
  /** Lower-cased tag and category names, for case-insensitive filters. */
  tagNames: string[];
  categoryName: string | null;
  organic: boolean;
}

export const CHEESES = "cheeses";

/** Raise when projectCheese writes something else: the read model is rebuilt (architecture.md). */
export const CHEESES_VERSION = 1;

const listFilters = {
  status: { $in: ["available"] },
  tagNames: { $in: ["soft"] },
  categoryName: "brie",
  organic: true,
};
const optionalFilters = ["status", "tagNames", "categoryName", "organic"];

/** The `cheeses` collection's indexes and every query run on it (handlers/cheese-queries.ts). */
export const cheesesCollection: CollectionDefinition = {
  name: CHEESES,
  indexes: [{ keys: { sortName: 1, _id: 1 } }, { keys: { createdAt: 1, _id: 1 } }, { keys: { status: 1 } }],
  queries: [
    {
      name: "GET /cheeses sorted by name, a page after the cursor",
      filter: { ...listFilters, $or: [{ sortName: { $gt: "b" } }, { sortName: "b", _id: { $gt: 1 } }] },
      optional: [...optionalFilters, "sortName", "_id"],
      sort: { sortName: 1, _id: 1 },
    },
    {
      name: "GET /cheeses sorted by creation time, a page after the cursor",
      filter: {
        ...listFilters,
        $or: [{ createdAt: { $gt: "2025" } }, { createdAt: "2025", _id: { $gt: 1 } }],
      },
      optional: [...optionalFilters, "createdAt", "_id"],
      sort: { createdAt: 1, _id: 1 },
    },
    {
      name: "GET /cheeses total of the matches",
      filter: listFilters,
      optional: optionalFilters,
      scans: "with no filter the total counts every live cheese (an index-only count at best)",
    },
    {
      name: "findByStatus / findByTags, every match by id",
      filter: { status: { $in: ["available"] }, tagNames: { $in: ["soft"] } },
      optional: ["status", "tagNames"],
      sort: { _id: 1 },
    },
    {
      name: "GET /store/inventory, cheeses per status",
      filter: {},
      groupBy: "status",
      scans: "the inventory counts every live cheese, grouped by status",
    },
  ],
};

/**
 * The events `projectCheese` writes the same fields of for, whatever the cheese held before (its
 * searchable fields from the cheese they carry; images stay): of a run of them in one stream a
 * catch-up applies only the last (`ProjectionOptions.overwrites`).
 */
export const cheesesOverwrites = ["CheeseUpdated", "CheeseStatusChanged"] as const;

/**
 * The `cheeses` projection as the catalogue's wiring starts it (`main.ts`), given its event store,
 * read models and logger; its tests and benches start the same one.
 */
export const cheesesProjection = {
  name: "cheeses",
  version: CHEESES_VERSION,
  collections: [cheesesCollection],
  categories: ["cheese"],
  apply: projectCheese,
  overwrites: cheesesOverwrites,
} satisfies Partial<ProjectionOptions>;

export async function projectCheese(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  const cheeses = readModels.collection<CheeseDocument>(CHEESES);
  const domainEvent = { type: event.type, data: event.data } as CheeseEvent;
  switch (domainEvent.type) {
    case "CheeseAdded":
      await cheeses.upsert(domainEvent.data.cheese.id, event.revision, {
        $set: { ...searchFields(domainEvent.data.cheese), images: [] },
      });
      return;
    case "CheeseUpdated":
    case "CheeseStatusChanged":
      await cheeses.upsert(domainEvent.data.cheese.id, event.revision, {
        $set: searchFields(domainEvent.data.cheese),
      });
      return;
    case "CheeseImageAttached": {
      const { cheese, image } = domainEvent.data;
      const stored = await cheeses.findOneReadOnly({ _id: cheese.id });
      const earlier = (stored?.images ?? []).map((other) =>
        image.isPrimary ? { ...other, isPrimary: false } : other,
      );
      await cheeses.upsert(cheese.id, event.revision, {
        $set: { ...searchFields(cheese), images: [...earlier, image] },
      });
      return;
    }
    case "CheeseDeleted":
      await cheeses.deleteOne(domainEvent.data.cheeseId, event.revision);
      return;
  }
}

function searchFields(cheese: Cheese) {
  return {
    cheese,
    sortName: normaliseName(cheese.name),
    createdAt: cheese.createdAt ?? "",
    status: cheese.status,
    tagNames: (cheese.tags ?? []).map((tag) => normaliseName(tag.name)),
    categoryName: cheese.category ? normaliseName(cheese.category.name) : null,
    organic: cheese.organic ?? false,
  };
}
