import { describe, expect, it } from "vitest";
import { cheeseOf } from "../src/domain/cheese.ts";
import { CheckedCheeses } from "../src/handlers/checked-cheeses.ts";
import type { CheeseDocument } from "../src/projections/cheeses.ts";

const at = "2026-11-24T10:00:00.000Z";
const documentOf = (id: number, revision: number, name: string): CheeseDocument => {
  const cheese = cheeseOf(
    id,
    { name, photoUrls: [], tags: [], status: "available", origin: null, organic: false },
    at,
    at,
  );
  return {
    _id: id,
    _revision: revision,
    cheese,
    images: [],
    sortName: name.toLowerCase(),
    createdAt: at,
    status: "available",
    tagNames: [],
    categoryName: null,
    organic: false,
  };
};

describe("a cheese's checked API JSON, kept per version", () => {
  it("gives the text of the document's own revision: a new version never gets the old text", () => {
    const kept = new CheckedCheeses();
    expect(JSON.parse(kept.textOf(documentOf(1, 0, "Brie")))).toEqual(documentOf(1, 0, "Brie").cheese);
    expect(JSON.parse(kept.textOf(documentOf(1, 1, "Brie de Meaux"))).name).toBe("Brie de Meaux");
    expect(JSON.parse(kept.textOf(documentOf(1, 1, "Brie de Meaux"))).name).toBe("Brie de Meaux");
    expect(kept.size).toBe(1);
  });

  it("keeps the text the schema checked: fields the API does not have are not in it", () => {
    const document = documentOf(2, 0, "Comté");
    const text = new CheckedCheeses().textOf({
      ...document,
      cheese: { ...document.cheese, internal: 1 } as never,
    });
    expect(JSON.parse(text)).toEqual(document.cheese);
  });

  it("refuses a cheese breaking the API schema (a bug: the reply becomes a 500)", () => {
    const document = documentOf(3, 0, "Morbier");
    expect(() =>
      new CheckedCheeses().textOf({ ...document, cheese: { ...document.cheese, id: "x" } as never }),
    ).toThrow(/broke its schema/);
  });

  it("keeps at most its capacity, the oldest made going first", () => {
    const kept = new CheckedCheeses(2);
    for (const id of [1, 2, 3]) kept.textOf(documentOf(id, 0, `Cheese ${id}`));
    expect(kept.size).toBe(2);
    expect(JSON.parse(kept.textOf(documentOf(1, 0, "Cheese 1"))).id).toBe(1);
    expect(kept.size).toBe(2);
  });
});
