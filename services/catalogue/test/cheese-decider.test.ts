import { specFor } from "@cheese/service-kit/testing";
import { describe, it } from "vitest";
import { cheeseDecider } from "../src/domain/cheese.ts";
import { nameReservationDecider } from "../src/domain/name-reservation.ts";

const brie = {
  id: 7,
  name: "Brie",
  status: "available" as const,
  organic: false,
  photoUrls: [],
  tags: [],
  origin: null,
  createdAt: "2026-11-22T10:00:00.000Z",
  updatedAt: "2026-11-22T10:00:00.000Z",
};

describe("cheese decider", () => {
  const given = specFor(cheeseDecider);

  it("adds a cheese that does not exist yet", () => {
    given([])
      .when({ type: "AddCheese", cheese: brie })
      .thenEmits([{ type: "CheeseAdded", data: { cheese: brie } }]);
  });

  it("refuses to add the same cheese twice", () => {
    given([{ type: "CheeseAdded", data: { cheese: brie } }])
      .when({ type: "AddCheese", cheese: brie })
      .thenRefuses({ body: { status: 409, type: "conflict" } });
  });
});

describe("name reservation decider", () => {
  const given = specFor(nameReservationDecider);

  it("reserves a free name", () => {
    given([])
      .when({ type: "Reserve", cheeseId: 1 })
      .thenEmits([{ type: "NameReserved", data: { cheeseId: 1 } }]);
  });

  it("refuses a name another cheese holds", () => {
    given([{ type: "NameReserved", data: { cheeseId: 1 } }])
      .when({ type: "Reserve", cheeseId: 2 })
      .thenRefuses({ body: { status: 409 } });
  });

  it("is idempotent for the holder", () => {
    given([{ type: "NameReserved", data: { cheeseId: 1 } }])
      .when({ type: "Reserve", cheeseId: 1 })
      .thenEmits([]);
  });

  it("lets the name be taken again once released", () => {
    given([
      { type: "NameReserved", data: { cheeseId: 1 } },
      { type: "NameReleased", data: { cheeseId: 1 } },
    ])
      .when({ type: "Reserve", cheeseId: 2 })
      .thenEmits([{ type: "NameReserved", data: { cheeseId: 2 } }]);
  });

  it("only releases for the holder", () => {
    given([{ type: "NameReserved", data: { cheeseId: 1 } }])
      .when({ type: "Release", cheeseId: 2 })
      .thenEmits([]);
  });
});
