/**
 * Large histories for a fixture's DATA_DIR, written straight into the embedded event store's
 * SQLite tables in one transaction: through the port every append is its own durable
 * transaction, and a million would take many minutes. The file is created by the adapter first,
 * so the tables are its own; the id block goes through the port, so new ids follow the history.
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

/**
 * `cheeses` cheeses in the catalogue's store under `dataDir`, each added and then updated
 * `eventsPerCheese - 1` times (its price changing): `cheeses * eventsPerCheese` events.
 */
export async function writeCatalogueHistory(
  dataDir: string,
  cheeses: number,
  eventsPerCheese = 1,
): Promise<{ events: number; file: string }> {
  mkdirSync(join(dataDir, "catalogue"), { recursive: true });
  const file = join(dataDir, "catalogue", "events.sqlite");
  const store = createSqliteEventStore({ file });
  await store.append("idblock-cheese", [{ type: "IdBlockReserved", data: { first: 1, last: cheeses } }], {
    expectedRevision: "no_stream",
  });
  await store.close();

  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  const insertEvent = db.prepare(
    `INSERT INTO events (stream, category, revision, id, type, data, metadata, created_at)
     VALUES (?, 'cheese', ?, ?, ?, ?, '{}', ?)`,
  );
  const insertStream = db.prepare("INSERT INTO streams (name, revision, deleted) VALUES (?, ?, 0)");
  const start = Date.parse("2026-01-01T00:00:00.000Z");
  db.transaction(() => {
    for (let n = 1; n <= cheeses; n++) {
      const stream = `cheese-${n}`;
      const at = new Date(start + n * 1000).toISOString();
      const cheese = historicCheese(n, at);
      insertEvent.run(stream, 0, randomUUID(), "CheeseAdded", JSON.stringify({ cheese }), at);
      for (let revision = 1; revision < eventsPerCheese; revision++) {
        const updated = { ...cheese, pricePerKg: cheese.pricePerKg + revision };
        insertEvent.run(
          stream,
          revision,
          randomUUID(),
          "CheeseUpdated",
          JSON.stringify({ cheese: updated }),
          at,
        );
      }
      insertStream.run(stream, eventsPerCheese - 1);
    }
  })();
  db.close();
  return { events: cheeses * eventsPerCheese, file };
}
