import { catalogueRpc } from "@cheese/contracts";
import { type ServiceSpec, serviceSpec } from "@cheese/service-kit/testing";
import { afterEach, beforeEach, describe, it } from "vitest";
import { type CheeseDetails, type CheeseEvent, cheeseOf } from "../src/domain/cheese.ts";
import { catalogueService } from "../src/main.ts";

const at = "2026-11-22T10:00:00.000Z";
const brie: CheeseDetails = {
  name: "Brie",
  category: { id: 3, name: "Soft" },
  photoUrls: [],
  tags: [],
  status: "available",
  origin: null,
  organic: false,
};
/** The category "Soft" has id 3, and cheese 7 is its Brie, holding the name. */
const soft = { "categoryname-soft": [{ type: "NameIdAssigned", data: { id: 3, name: "Soft" } }] };
const brie7 = {
  "cheese-7": [{ type: "CheeseAdded", data: { cheese: cheeseOf(7, brie, at, at) } } as CheeseEvent],
  "cheesename-3:brie": [{ type: "Reserved", data: { holder: 7, at } }],
};

/** Given events, when an RPC, then its reply and the events it appended. */
describe("the catalogue's handlers", () => {
  let spec: ServiceSpec;
  beforeEach(async () => {
    spec = await serviceSpec(catalogueService, { start: at });
  });
  afterEach(async () => {
    await spec.stop();
  });

  it("adds a cheese: its category's id resolved, its name reserved, CheeseAdded at the clock's time", async () => {
    const comte = cheeseOf(1, { ...brie, name: "Comté", category: { id: 3, name: "soft" } }, at, at);
    await spec
      .given(soft)
      .when(catalogueRpc.createCheese, {
        fields: { name: "Comté", category: { name: "soft" }, status: "available", organic: false },
      })
      .thenReturns({
        reply: { cheese: comte, revision: 0 },
        events: {
          "cheesename-3:comté": [{ type: "Reserved", data: { holder: 1, at } }],
          "cheese-1": [{ type: "CheeseAdded", data: { cheese: comte } }],
        },
      });
  });

  it("refuses a name another cheese of the category has (409), in any case, and adds nothing", async () => {
    await spec
      .given({ ...soft, ...brie7 })
      .when(catalogueRpc.createCheese, {
        fields: { name: " BRIE ", category: { name: "Soft" }, status: "available", organic: false },
      })
      .thenRefuses({ status: 409, message: "a cheese with this name already exists in the category" }, [
        "cheese-1",
      ]);
  });

  it("renames a cheese: the new name reserved in the same write as the change, the old one given back after", async () => {
    const renamed = cheeseOf(7, { ...brie, name: "Brie de Meaux" }, at, at);
    await spec
      .given(brie7)
      .when(catalogueRpc.updateCheese, { cheeseId: 7, changes: { name: "Brie de Meaux" } })
      .thenReturns({
        reply: { cheese: renamed, revision: 1 },
        events: {
          "cheese-7": [{ type: "CheeseUpdated", data: { cheese: renamed } }],
          "cheesename-3:brie de meaux": [{ type: "Reserved", data: { holder: 7, at } }],
          "cheesename-3:brie": [{ type: "Released", data: { holder: 7 } }],
        },
      });
  });

  it("refuses a change on a stale ETag (412) and changes nothing", async () => {
    await spec
      .given(brie7)
      .when(catalogueRpc.updateCheese, { cheeseId: 7, changes: { status: "sold" }, ifMatch: [5] })
      .thenRefuses({ status: 412, type: "precondition_failed" });
  });
});
