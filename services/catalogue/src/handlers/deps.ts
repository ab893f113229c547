import type { BlobStore } from "@cheese/blob-store";
import type { EventStore } from "@cheese/event-store";
import type { MessageBus } from "@cheese/messaging";
import type { ReadModelStore } from "@cheese/read-models";
import type { Clock, IdAllocator, Projection } from "@cheese/service-kit";
import type { CheckedCheeses } from "./checked-cheeses.ts";

/** What the catalogue's handlers work with, built once in `main.ts`. */
export interface CatalogueDeps {
  store: EventStore;
  clock: Clock;
  cheeseIds: IdAllocator;
  /** Ids of category and tag names. */
  nameIds: IdAllocator;
  /**
   * The id of each category and tag name stream read so far (`handlers/names.ts`): the first
   * writer of a name fixes its id for good, so a name once read is not read again.
   */
  knownNames: Map<string, number>;
  blobs: BlobStore;
  bus: MessageBus;
  /** Deadline for asking ordering; shorter than the gateway's so its 503 is ours to give. */
  orderingTimeoutMs: number;
  readModels: ReadModelStore;
  /** Cheeses' API JSON, checked once per version and kept, for the lists. */
  checkedCheeses: CheckedCheeses;
  /** The `cheeses` read model, for every read. */
  projection: Projection;
}
