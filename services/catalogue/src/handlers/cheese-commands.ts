import type { CheeseFields, CheeseReply } from "@cheese/contracts";
import type { EventStore } from "@cheese/event-store";
import { contextMetadata, type HandlerContext, handleCommand, type IdAllocator } from "@cheese/service-kit";
import { cheeseDecider, cheeseStream } from "../domain/cheese.ts";
import { nameReservationDecider, nameReservationStream } from "../domain/name-reservation.ts";
import { idForName } from "../domain/named-ids.ts";

export interface CatalogueWriteSide {
  store: EventStore;
  cheeseIds: IdAllocator;
  nameIds: IdAllocator;
}

/**
 * Adds a cheese: resolve category and tag ids, reserve the name within the category (409 when
 * taken), then append CheeseAdded. If the add fails the reservation is released again.
 */
export async function addCheese(
  side: CatalogueWriteSide,
  fields: CheeseFields,
  context: HandlerContext,
): Promise<CheeseReply> {
  const metadata = contextMetadata(context);
  const category = fields.category
    ? {
        id: await idForName(side.store, side.nameIds, "category", fields.category.name),
        name: fields.category.name,
      }
    : undefined;
  const tags = await Promise.all(
    (fields.tags ?? []).map(async (tag) => ({
      id: await idForName(side.store, side.nameIds, "tag", tag.name),
      name: tag.name,
    })),
  );
  const id = await side.cheeseIds.nextId();
  const reservation = nameReservationStream(category?.id, fields.name);
  await handleCommand(
    side.store,
    reservation,
    nameReservationDecider,
    { type: "Reserve", cheeseId: id },
    metadata,
  );

  const now = new Date().toISOString();
  const cheese = {
    id,
    name: fields.name,
    ...(category ? { category } : {}),
    photoUrls: fields.photoUrls ?? [],
    tags,
    status: fields.status,
    origin: fields.origin ?? null,
    ...(fields.pricePerKg !== undefined ? { pricePerKg: fields.pricePerKg } : {}),
    ...(fields.ageMonths !== undefined ? { ageMonths: fields.ageMonths } : {}),
    organic: fields.organic,
    createdAt: now,
    updatedAt: now,
  };
  try {
    const result = await handleCommand(
      side.store,
      cheeseStream(id),
      cheeseDecider,
      { type: "AddCheese", cheese },
      metadata,
    );
    return { cheese, revision: result.revision };
  } catch (error) {
    await handleCommand(
      side.store,
      reservation,
      nameReservationDecider,
      { type: "Release", cheeseId: id },
      metadata,
    );
    throw error;
  }
}
