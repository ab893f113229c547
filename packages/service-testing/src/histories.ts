/**
 * Large histories for a fixture's DATA_DIR, written straight into the embedded event store's
 * SQLite tables in one transaction: through the port every append is its own durable
 * transaction, and a million would take many minutes. The file is created by the adapter first,
 * so the tables are its own; the id block goes through the port, so new ids follow the history.
 * The benchmarks and the rebuild tests (a service's and e2e's) start from such histories.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createSqliteEventStore } from "@cheese/event-store";
import Database from "better-sqlite3";

const statuses = ["available", "pending", "sold"] as const;

/** The n-th cheese as the catalogue records it (4 categories, 3 statuses, 5 + 3 tags). */
export function historicCheese(n: number, at: string) {
  return {
    id: n,
    name: `Historic ${n}`,
    category: { id: (n % 4) + 1, name: `Category ${n % 4}` },
    photoUrls: [],
    tags: [
      { id: (n % 5) + 1, name: `t${n % 5}` },
      { id: (n % 3) + 6, name: `u${n % 3}` },
    ],
    status: statuses[n % 3],
    origin: "FR",
    pricePerKg: 10 + (n % 30),
    ageMonths: n % 24,
    organic: n % 2 === 0,
    createdAt: at,
    updatedAt: at,
  };
}

/** The n-th order as the ordering service records it: one line of cheese n, placed by an operator client. */
export function historicOrder(n: number, at: string, status: "placed" | "approved") {
  const cheese = historicCheese(n, at);
  const pricePerKg = cheese.pricePerKg;
  return {
    id: n,
    items: [{ cheeseId: n, cheeseName: cheese.name, quantity: 1 + (n % 3), pricePerKg }],
    shippingAddress: { street: `${n} Bench Lane`, city: "Wells", country: "GB" },
    status,
    notes: null,
    total: pricePerKg * (1 + (n % 3)),
    shipDate: null,
    createdAt: at,
    updatedAt: at,
  };
}

interface HistoricEvent {
  type: string;
  data: unknown;
}

/**
 * `count` streams `<category>-1` … `<category>-<count>` in the store of `service` under `dataDir`,
 * the n-th holding `eventsOf(n, at)` (at: n seconds after 2026-01-01), and the id block of
 * `category` reserved up to `count`. Returns the number of events written, the file, and the
 * position of the last event (the head a snapshot taken after them would record).
 */
export async function writeHistory(
  dataDir: string,
  service: string,
  category: string,
  count: number,
  eventsOf: (n: number, at: string) => HistoricEvent[],
): Promise<{ events: number; file: string; head: number }> {
  mkdirSync(join(dataDir, service), { recursive: true });
  const file = join(dataDir, service, "events.sqlite");
  const store = createSqliteEventStore({ file });
  await store.append(`idblock-${category}`, [{ type: "IdBlockReserved", data: { first: 1, last: count } }], {
    expectedRevision: "no_stream",
  });
  await store.close();

  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  const insertEvent = db.prepare(
    `INSERT INTO events (stream, category, revision, id, type, data, metadata, created_at)
     VALUES (?, ?, ?, ?, ?, ?, '{}', ?)`,
  );
  const insertStream = db.prepare("INSERT INTO streams (name, revision, deleted) VALUES (?, ?, 0)");
  const start = Date.parse("2026-01-01T00:00:00.000Z");
  let events = 0;
  db.transaction(() => {
    for (let n = 1; n <= count; n++) {
      const stream = `${category}-${n}`;
      const at = new Date(start + n * 1000).toISOString();
      const history = eventsOf(n, at);
      for (const [revision, event] of history.entries())
        insertEvent.run(stream, category, revision, randomUUID(), event.type, JSON.stringify(event.data), at);
      insertStream.run(stream, history.length - 1);
      events += history.length;
    }
  })();
  const { head } = db.prepare("SELECT max(position) AS head FROM events").get() as { head: number };
  db.close();
  return { events, file, head };
}

/**
 * `cheeses` cheeses in the catalogue's store under `dataDir`, each added and then updated
 * `eventsPerCheese - 1` times (its price changing): `cheeses * eventsPerCheese` events.
 */
export function writeCatalogueHistory(
  dataDir: string,
  cheeses: number,
  eventsPerCheese = 1,
): Promise<{ events: number; file: string }> {
  return writeHistory(dataDir, "catalogue", "cheese", cheeses, (n, at) => {
    const cheese = historicCheese(n, at);
    return Array.from({ length: eventsPerCheese }, (_, revision) =>
      revision === 0
        ? { type: "CheeseAdded", data: { cheese } }
        : {
            type: "CheeseUpdated",
            data: { cheese: { ...cheese, pricePerKg: cheese.pricePerKg + revision } },
          },
    );
  });
}

/**
 * `orders` orders in the ordering service's store under `dataDir`, the n-th for cheese n, each
 * placed by an operator client and approved (none left for the review at start):
 * `2 * orders` events.
 */
export function writeOrderingHistory(
  dataDir: string,
  orders: number,
): Promise<{ events: number; file: string }> {
  return writeHistory(dataDir, "ordering", "order", orders, (n, at) => [
    {
      type: "OrderPlaced",
      data: { order: historicOrder(n, at, "placed"), customerId: null, ownerId: "client:bench" },
    },
    { type: "OrderApproved", data: { order: historicOrder(n, at, "approved"), customerId: null } },
  ]);
}
