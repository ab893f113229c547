import { join } from "node:path";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { createLogger, startProjection } from "@cheese/service-kit";
import { historicCheese } from "@cheese/service-testing/histories";
import { tempDir } from "@cheese/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CHEESES, type CheeseDocument, cheesesProjection } from "../src/projections/cheeses.ts";

/**
 * A catch-up leaves out the CheeseUpdated and CheeseStatusChanged events that the next event of
 * their cheese writes over (`cheesesProjection.overwrites`): the read model it builds must be the one that
 * applying every event builds, images, deletions and lists included.
 */
const dir = tempDir("catalogue-catch-up");
let store: EventStore;

const image = (n: number, revision: number, isPrimary: boolean) => ({
  key: `images/${n}/${revision}`,
  thumbnailKey: `thumbnails/${n}/${revision}`,
  imageUrl: `/images/${n}/${revision}`,
  thumbnailUrl: `/thumbnails/${n}/${revision}`,
  size: 100 + revision,
  contentType: "image/png",
  width: 10,
  height: 10,
  isPrimary,
});

beforeAll(async () => {
  store = createSqliteEventStore({ file: join(dir.path, "events.sqlite") });
  // 200 cheeses written to in turn (so each page holds many cheeses), 12 events each: updates and
  // status changes in runs, an image between them, some deleted at the end.
  const appends: Promise<unknown>[] = [];
  for (let revision = 0; revision < 12; revision++)
    for (let n = 1; n <= 200; n++) {
      const at = new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
      const cheese = {
        ...historicCheese(n, at),
        pricePerKg: 10 + revision,
        status: (["available", "pending", "sold"] as const)[(n + revision) % 3],
        name: `Historic ${n} v${revision}`,
      };
      const event =
        revision === 0
          ? { type: "CheeseAdded", data: { cheese } }
          : revision % 5 === 2
            ? { type: "CheeseImageAttached", data: { cheese, image: image(n, revision, revision === 7) } }
            : revision === 11 && n % 4 === 0
              ? {
                  type: "CheeseDeleted",
                  data: {
                    cheeseId: n,
                    name: cheese.name,
                    categoryId: 1,
                    status: cheese.status,
                    imageKeys: [],
                  },
                }
              : revision % 3 === 0
                ? { type: "CheeseStatusChanged", data: { cheese, from: "available", to: cheese.status } }
                : { type: "CheeseUpdated", data: { cheese } };
      appends.push(store.append(`cheese-${n}`, [event], { expectedRevision: "any" }));
    }
  await Promise.all(appends);
});

afterAll(async () => {
  await store?.close();
  dir.remove();
});

async function build(leavingOut: boolean) {
  const readModels = createMemoryReadModels();
  let applied = 0;
  const { overwrites, apply, ...definition } = cheesesProjection;
  const projection = await startProjection({
    ...definition,
    eventStore: store,
    readModels,
    apply: async (event, models) => {
      applied += 1;
      await apply(event, models);
    },
    ...(leavingOut ? { overwrites } : {}),
    logger: createLogger("test", "silent"),
  });
  await projection.ready;
  const cheeses = readModels.collection<CheeseDocument>(CHEESES);
  const read = {
    all: await cheeses.find({}, { sort: { _id: 1 } }),
    byName: await cheeses.find(
      { status: { $in: ["available"] } },
      { sort: { sortName: 1, _id: 1 }, limit: 20 },
    ),
    count: await cheeses.count({ status: { $in: ["sold"] } }),
    inventory: await cheeses.countBy("status"),
  };
  await projection.close();
  return { read, applied };
}

it("builds the read model that applying every event builds, from fewer events", async () => {
  const everyEvent = await build(false);
  const leftOut = await build(true);
  expect(everyEvent.applied).toBe(2_400);
  expect(everyEvent.read.all).toHaveLength(150);
  expect(everyEvent.read.all.some((cheese) => cheese.images.length === 2)).toBe(true);
  expect(leftOut.read).toEqual(everyEvent.read);
  expect(leftOut.applied).toBeLessThan(everyEvent.applied);
});
