import { specFor } from "@cheese/service-kit/testing";
import { describe, expect, it } from "vitest";
import {
  type CheeseDetails,
  type CheeseEvent,
  cheeseDecider,
  cheeseOf,
  type StoredImage,
} from "../src/domain/cheese.ts";

const added = "2026-11-22T10:00:00.000Z";
const later = "2026-11-23T08:30:00.000Z";

const brieDetails: CheeseDetails = {
  name: "Brie",
  category: { id: 3, name: "Soft" },
  photoUrls: ["https://example.com/brie.jpg"],
  tags: [{ id: 4, name: "cow" }],
  status: "available",
  origin: "FR",
  pricePerKg: 24,
  organic: false,
};
const brie = cheeseOf(7, brieDetails, added, added);
const brieAdded: CheeseEvent = { type: "CheeseAdded", data: { cheese: brie } };

const image = (overrides: Partial<StoredImage> = {}): StoredImage => ({
  key: "images/a.png",
  thumbnailKey: "images/a.thumb.webp",
  imageUrl: "http://gw/v2/images/a.png",
  thumbnailUrl: "http://gw/v2/images/a.thumb.webp",
  size: 1234,
  contentType: "image/png",
  width: 640,
  height: 480,
  caption: "on the board",
  isPrimary: false,
  createdAt: later,
  ...overrides,
});

describe("cheese decider", () => {
  const given = specFor(cheeseDecider);

  it("adds a cheese that does not exist yet", () => {
    given([]).when({ type: "AddCheese", cheese: brie }).thenEmits([brieAdded]);
  });

  it("refuses to add the same cheese twice", () => {
    given([brieAdded])
      .when({ type: "AddCheese", cheese: brie })
      .thenRefuses({ body: { status: 409, type: "conflict" } });
  });

  describe("replace (PUT)", () => {
    it("replaces every field, resets the omitted ones, keeps createdAt and moves updatedAt", () => {
      const details: CheeseDetails = {
        name: "Brie de Meaux",
        photoUrls: [],
        tags: [],
        status: "available",
        origin: null,
        organic: true,
      };
      given([brieAdded])
        .when({ type: "ReplaceCheese", details, at: later })
        .thenEmits([{ type: "CheeseUpdated", data: { cheese: cheeseOf(7, details, added, later) } }]);
    });

    it("emits a status change beside the update when the status moves too", () => {
      const details = { ...brieDetails, pricePerKg: 30, status: "sold" as const };
      const cheese = cheeseOf(7, details, added, later);
      given([brieAdded])
        .when({ type: "ReplaceCheese", details, at: later })
        .thenEmits([
          { type: "CheeseUpdated", data: { cheese } },
          { type: "CheeseStatusChanged", data: { cheese, from: "available", to: "sold" } },
        ]);
    });

    it("emits nothing when nothing changes", () => {
      given([brieAdded]).when({ type: "ReplaceCheese", details: brieDetails, at: later }).thenEmits([]);
    });

    it("refuses a cheese that does not exist or was deleted", () => {
      given([])
        .when({ type: "ReplaceCheese", details: brieDetails, at: later })
        .thenRefuses({
          body: { status: 404, type: "not_found" },
        });
      given([brieAdded, deleted()])
        .when({ type: "ReplaceCheese", details: brieDetails, at: later })
        .thenRefuses({ body: { status: 404 } });
    });

    it("refuses with 412 when If-Match names an older revision, and accepts the current one or *", () => {
      const moved = { ...brieDetails, origin: "BE" };
      const history = [brieAdded, updated({ pricePerKg: 25 })];
      given(history)
        .when({ type: "ReplaceCheese", details: moved, at: later, ifMatch: [0] })
        .thenRefuses({ body: { status: 412, type: "precondition_failed" } });
      for (const ifMatch of [[1], [0, 1], "*" as const]) {
        const events = cheeseDecider.decide(
          { type: "ReplaceCheese", details: moved, at: later, ifMatch },
          history.reduce(cheeseDecider.evolve, cheeseDecider.initialState()),
        );
        expect(events.map((e) => e.type)).toEqual(["CheeseUpdated"]);
      }
    });
  });

  describe("partial update", () => {
    it("changes only the fields given", () => {
      const cheese = cheeseOf(7, { ...brieDetails, name: "Brie Noir", ageMonths: 12 }, added, later);
      given([brieAdded])
        .when({ type: "UpdateCheese", changes: { name: "Brie Noir", ageMonths: 12 }, at: later })
        .thenEmits([{ type: "CheeseUpdated", data: { cheese } }]);
    });

    it("removes the category when it is set to null", () => {
      const { category: _, ...withoutCategory } = brieDetails;
      given([brieAdded])
        .when({ type: "UpdateCheese", changes: { category: null }, at: later })
        .thenEmits([{ type: "CheeseUpdated", data: { cheese: cheeseOf(7, withoutCategory, added, later) } }]);
    });

    it("refuses with 412 when the cheese changed since If-Match", () => {
      given([brieAdded, updated({ origin: "BE" })])
        .when({ type: "UpdateCheese", changes: { name: "X" }, at: later, ifMatch: [0] })
        .thenRefuses({ body: { status: 412 } });
    });
  });

  describe("status change", () => {
    for (const [from, to] of [
      ["available", "sold"],
      ["available", "pending"],
      ["sold", "available"],
    ] as const) {
      it(`moves ${from} → ${to} with one event carrying both ends and the cheese`, () => {
        const start = cheeseOf(7, { ...brieDetails, status: from }, added, added);
        const cheese = cheeseOf(7, { ...brieDetails, status: to }, added, later);
        given([{ type: "CheeseAdded", data: { cheese: start } }])
          .when({ type: "ChangeCheeseStatus", status: to, at: later })
          .thenEmits([{ type: "CheeseStatusChanged", data: { cheese, from, to } }]);
      });
    }

    it("emits nothing when the status is already that", () => {
      given([brieAdded]).when({ type: "ChangeCheeseStatus", status: "available", at: later }).thenEmits([]);
    });
  });

  describe("image attached", () => {
    it("adds the image URL last, or first when it is the primary image", () => {
      const plain = image();
      given([brieAdded])
        .when({ type: "AttachImage", image: plain, at: later })
        .thenEmits([
          {
            type: "CheeseImageAttached",
            data: {
              cheese: cheeseOf(
                7,
                { ...brieDetails, photoUrls: [...brieDetails.photoUrls, plain.imageUrl] },
                added,
                later,
              ),
              image: plain,
            },
          },
        ]);
      const primary = image({ isPrimary: true, imageUrl: "http://gw/v2/images/b.png" });
      given([brieAdded])
        .when({ type: "AttachImage", image: primary, at: later })
        .thenEmits([
          {
            type: "CheeseImageAttached",
            data: {
              cheese: cheeseOf(
                7,
                { ...brieDetails, photoUrls: [primary.imageUrl, ...brieDetails.photoUrls] },
                added,
                later,
              ),
              image: primary,
            },
          },
        ]);
    });

    it("refuses an image for a cheese that already has 50 photoUrls (409), so what it reads back can be PUT", () => {
      const full = cheeseOf(
        7,
        { ...brieDetails, photoUrls: Array.from({ length: 50 }, (_, i) => `https://example.com/${i}.jpg`) },
        added,
        added,
      );
      for (const isPrimary of [false, true]) {
        given([{ type: "CheeseAdded", data: { cheese: full } }])
          .when({ type: "AttachImage", image: image({ isPrimary }), at: later })
          .thenRefuses({ body: { status: 409, type: "conflict" } });
      }
    });

    it("refuses an image for a missing cheese", () => {
      given([])
        .when({ type: "AttachImage", image: image(), at: later })
        .thenRefuses({ body: { status: 404 } });
    });
  });

  describe("delete", () => {
    it("deletes a confirmed cheese without active orders, naming the blobs of its images", () => {
      const attached = image();
      const withImage: CheeseEvent = {
        type: "CheeseImageAttached",
        data: { cheese: brie, image: attached },
      };
      given([brieAdded, withImage])
        .when({ type: "DeleteCheese", confirmed: true, activeOrders: 0 })
        .thenEmits([
          {
            type: "CheeseDeleted",
            data: {
              cheeseId: 7,
              name: "Brie",
              categoryId: 3,
              status: "available",
              imageKeys: [attached.key, attached.thumbnailKey],
            },
          },
        ]);
    });

    it("refuses without confirmation (400), with active orders (409), and when absent (404)", () => {
      given([brieAdded])
        .when({ type: "DeleteCheese", confirmed: false, activeOrders: 0 })
        .thenRefuses({ body: { status: 400, type: "bad_request" } });
      given([brieAdded])
        .when({ type: "DeleteCheese", confirmed: true, activeOrders: 2 })
        .thenRefuses({ body: { status: 409, type: "conflict" } });
      given([brieAdded, deleted()])
        .when({ type: "DeleteCheese", confirmed: true, activeOrders: 0 })
        .thenRefuses({ body: { status: 404 } });
    });
  });

  it("counts the revision (the ETag) one per event", () => {
    const state = [brieAdded, updated({ origin: "BE" }), updated({ origin: "CH" })].reduce(
      cheeseDecider.evolve,
      cheeseDecider.initialState(),
    );
    expect(state.revision).toBe(2);
  });
});

function updated(changes: Partial<CheeseDetails>): CheeseEvent {
  return {
    type: "CheeseUpdated",
    data: { cheese: cheeseOf(7, { ...brieDetails, ...changes }, added, later) },
  };
}

function deleted(): CheeseEvent {
  return {
    type: "CheeseDeleted",
    data: { cheeseId: 7, name: "Brie", categoryId: 3, status: "available", imageKeys: [] },
  };
}
