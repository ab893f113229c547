import type { CheeseReply } from "@cheese/contracts";
import type { ReadModelStore } from "@cheese/read-models";
import { DomainError, type Projection } from "@cheese/service-kit";
import { CHEESES, type CheeseDocument } from "../projections/cheeses.ts";

export interface CatalogueReadSide {
  readModels: ReadModelStore;
  projection: Projection;
}

/** Reads one cheese; waits for the projection first so a write by any replica is visible. */
export async function getCheese(side: CatalogueReadSide, cheeseId: number): Promise<CheeseReply> {
  await side.projection.catchUp();
  const document = await side.readModels.collection<CheeseDocument>(CHEESES).findOne({ _id: cheeseId });
  if (!document) throw new DomainError(404, "not_found", `cheese ${cheeseId} not found`);
  return { cheese: document.cheese, revision: document._revision as number };
}
