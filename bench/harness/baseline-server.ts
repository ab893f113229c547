/**
 * The limit the system is measured against: a bare Hono server on @hono/node-server, in a
 * process of its own, answering the same JSON from memory. No authentication, no validation, no
 * hops, no storage: what one Node process pays for HTTP and JSON alone.
 *
 * Any collection `/v2/<name>` the parent sends (IPC `{ seed }`) is served: `GET /v2/<name>/<id>`,
 * `GET /v2/<name>?limit&sort&<field>=<value>[,value]` (a keyset-like page with `total`, as the
 * API's lists answer), `POST /v2/<name>` (create) and `POST|PATCH /v2/<name>/<id>` (merge). A
 * list keeps each sort order it was asked for until the next write, as an index would.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import type { Doc } from "./scenario.ts";

interface Collection {
  byId: Map<number, Doc>;
  nextId: number;
  /** Documents in a sort order (`-createdAt`), built when first asked for, dropped on a write. */
  sorted: Map<string, Doc[]>;
  /** Totals per filter, dropped on a write. */
  totals: Map<string, number>;
}

const collections = new Map<string, Collection>();

function seed(data: Record<string, Doc[]>): void {
  collections.clear();
  for (const [name, docs] of Object.entries(data)) {
    collections.set(name, {
      byId: new Map(docs.map((doc) => [doc.id, doc])),
      nextId: Math.max(0, ...docs.map((doc) => doc.id)) + 1,
      sorted: new Map(),
      totals: new Map(),
    });
  }
}

function written(collection: Collection): void {
  collection.sorted.clear();
  collection.totals.clear();
}

function compare(sort: string) {
  const descending = sort.startsWith("-");
  const field = descending ? sort.slice(1) : sort;
  const sign = descending ? -1 : 1;
  return (a: Doc, b: Doc) => {
    const x = a[field] as string | number;
    const y = b[field] as string | number;
    return x < y ? -sign : x > y ? sign : (a.id - b.id) * sign;
  };
}

/** A filter value matches a field equal to it, a `{name}` with it, or an array holding either. */
function matches(doc: Doc, filters: [string, string[]][]): boolean {
  for (const [field, values] of filters) {
    const value = doc[field];
    const candidates = Array.isArray(value) ? value : [value];
    const hit = candidates.some((candidate) => {
      const text =
        candidate && typeof candidate === "object" ? (candidate as { name?: unknown }).name : candidate;
      return values.includes(String(text).toLowerCase());
    });
    if (!hit) return false;
  }
  return true;
}

const app = new Hono();
app.get("/readyz", (c) => c.json({ status: "ok" }));

app.get("/v2/:collection/:id{[0-9]+}", (c) => {
  const doc = collections.get(c.req.param("collection"))?.byId.get(Number(c.req.param("id")));
  if (!doc) return c.json({ status: 404, error: "not_found", message: "not found" }, 404);
  c.header("ETag", '"1"');
  return c.json(doc);
});

app.get("/v2/:collection", (c) => {
  const collection = collections.get(c.req.param("collection"));
  if (!collection) return c.json({ status: 404, error: "not_found", message: "not found" }, 404);
  const { limit = "20", sort = "id", cursor, ...rest } = c.req.query();
  const filters = Object.entries(rest).map(
    ([field, value]) => [field, value.toLowerCase().split(",")] as [string, string[]],
  );
  let ordered = collection.sorted.get(sort);
  if (!ordered) {
    ordered = [...collection.byId.values()].sort(compare(sort));
    collection.sorted.set(sort, ordered);
  }
  const size = Number(limit);
  const page: Doc[] = [];
  let index = cursor ? Number(Buffer.from(cursor, "base64url").toString()) : 0;
  for (; index < ordered.length && page.length <= size; index++) {
    if (matches(ordered[index]!, filters)) page.push(ordered[index]!);
  }
  const filterKey = JSON.stringify(filters);
  let total = collection.totals.get(filterKey);
  if (total === undefined) {
    total = 0;
    for (const doc of ordered) if (matches(doc, filters)) total++;
    collection.totals.set(filterKey, total);
  }
  const hasMore = page.length > size;
  const nextCursor = hasMore ? Buffer.from(String(index - 1)).toString("base64url") : null;
  c.header("X-Total-Count", String(total));
  return c.json({ items: page.slice(0, size), nextCursor, hasMore, total });
});

app.post("/v2/:collection", async (c) => {
  const collection = collections.get(c.req.param("collection"));
  if (!collection) return c.json({ status: 404, error: "not_found", message: "not found" }, 404);
  const body = await c.req.json<Record<string, unknown>>();
  const now = new Date().toISOString();
  const doc: Doc = { status: "available", ...body, id: collection.nextId++, createdAt: now, updatedAt: now };
  collection.byId.set(doc.id, doc);
  written(collection);
  c.header("Location", `/v2/${c.req.param("collection")}/${doc.id}`);
  c.header("ETag", '"1"');
  return c.json(doc, 201);
});

const merge = async (c: Context) => {
  const collection = collections.get(c.req.param("collection") ?? "");
  const doc = collection?.byId.get(Number(c.req.param("id")));
  if (!collection || !doc) return c.json({ status: 404, error: "not_found", message: "not found" }, 404);
  const body = await c.req.json<Record<string, unknown>>();
  const changed: Doc = { ...doc, ...body, id: doc.id, updatedAt: new Date().toISOString() };
  collection.byId.set(doc.id, changed);
  written(collection);
  c.header("ETag", '"2"');
  return c.json(changed);
};
app.post("/v2/:collection/:id{[0-9]+}", merge);
app.patch("/v2/:collection/:id{[0-9]+}", merge);

process.on("message", (message: { seed?: Record<string, Doc[]> }) => {
  if (message.seed) {
    seed(message.seed);
    process.send?.({ seeded: true });
  }
});

const server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info: AddressInfo) => {
  process.send?.({ port: info.port });
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
process.on("disconnect", () => process.exit(0));
