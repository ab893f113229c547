import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/** GET /cheeses (keyset cursor pagination, filters, sorts), findByStatus and findByTags over HTTP. */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem();
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

interface Cheese {
  id: number;
  name: string;
  status: string;
  createdAt: string;
  tags: { name: string }[];
}

const url = (path: string) => `${system.baseUrl}${path}`;
const get = (path: string, headers: Record<string, string> = auth.apiKey) => fetch(url(path), { headers });

async function create(body: Record<string, unknown>): Promise<Cheese> {
  const response = await fetch(url("/cheeses"), {
    method: "POST",
    headers: { "content-type": "application/json", ...auth.bearer },
    body: JSON.stringify(body),
  });
  expect(response.status, JSON.stringify(body)).toBe(201);
  return json(response);
}

async function remove(id: number): Promise<void> {
  const response = await fetch(url(`/cheeses/${id}`), {
    method: "DELETE",
    headers: { ...auth.bearer, "x-confirm-delete": "true" },
  });
  expect(response.status).toBe(204);
}

const unique = (() => {
  let n = 0;
  return (prefix: string) => `${prefix}-${Date.now().toString(36)}-${n++}`;
})();

/** Names in a shuffled order, so creation order and name order differ. */
const shuffledNames = (count: number, prefix: string) =>
  Array.from({ length: count }, (_, i) => `${prefix} ${String.fromCharCode(97 + ((i * 7) % 26))}${i}`);

describe("pagination while the catalogue changes", () => {
  for (const sort of ["name", "-name", "createdAt", "-createdAt"] as const) {
    it(`pages with sort=${sort} as cheeses are added and deleted: nothing twice, nothing present throughout missing`, async () => {
      const tag = unique("paging");
      const stable: Cheese[] = [];
      for (const name of shuffledNames(23, `Stable ${tag}`))
        stable.push(await create({ name, tags: [{ name: tag }] }));
      const churn: Cheese[] = [];
      for (const name of shuffledNames(8, `Churn ${tag}`))
        churn.push(await create({ name, tags: [{ name: tag }] }));

      const seen: Cheese[] = [];
      let next: string | null = `/cheeses?tags=${tag}&sort=${encodeURIComponent(sort)}&limit=4`;
      let pages = 0;
      while (next) {
        const response = await get(next);
        expect(response.status).toBe(200);
        const page = await json(response);
        expect(page.items.length).toBeLessThanOrEqual(4);
        expect(response.headers.get("x-total-count")).toBe(String(page.total));
        seen.push(...page.items);
        pages++;
        const link = response.headers.get("link");
        if (page.hasMore) {
          expect(link).toMatch(/^<[^>]+>; rel="next"$/);
          const linked = new URL(/^<([^>]+)>/.exec(link!)![1]!);
          expect(linked.searchParams.get("cursor")).toBe(page.nextCursor);
          // Follow only the cursor: sort and filters travel inside it.
          next = `/cheeses?cursor=${page.nextCursor}&limit=4`;
        } else {
          expect(page.nextCursor).toBeNull();
          expect(link).toBeNull();
          next = null;
        }
        // Meanwhile: new cheeses at both ends of every order, and deletions.
        await create({ name: `AAA ${unique("new")}`, tags: [{ name: tag }] });
        await create({ name: `zzz ${unique("new")}`, tags: [{ name: tag }] });
        const doomed = churn.shift();
        if (doomed) await remove(doomed.id);
      }
      expect(pages).toBeGreaterThan(5);

      const ids = seen.map((c) => c.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const cheese of stable) expect(ids, cheese.name).toContain(cheese.id);
      // What came back is in the requested order, ties on id.
      const key = (c: Cheese) => (sort.endsWith("name") ? c.name.toLowerCase() : c.createdAt);
      const descending = sort.startsWith("-");
      for (let i = 1; i < seen.length; i++) {
        const [a, b] = [seen[i - 1]!, seen[i]!];
        const order = key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : Math.sign(a.id - b.id);
        expect(descending ? order > 0 : order < 0, `${a.name} then ${b.name}`).toBe(true);
      }
    });
  }
});

describe("filters, totals and limits", () => {
  const tag = unique("filters");
  const other = unique("other");
  const category = unique("Cat");
  beforeAll(async () => {
    await create({ name: "Filter A", tags: [{ name: tag }], category: { name: category }, organic: true });
    await create({ name: "Filter B", tags: [{ name: tag }], status: "sold" });
    await create({
      name: "Filter C",
      tags: [{ name: other }],
      category: { name: category },
      status: "pending",
    });
    await create({
      name: "Filter D",
      tags: [{ name: tag }, { name: other }],
      status: "pending",
      organic: true,
    });
  });

  const names = async (query: string) => {
    const response = await get(`/cheeses?${query}`);
    expect(response.status, query).toBe(200);
    const page = await json(response);
    return { names: page.items.map((c: Cheese) => c.name), total: page.total, page, response };
  };

  it("filters by status (several), tags (any), category (name, any case) and organic; total counts all matches", async () => {
    expect((await names(`tags=${tag}`)).names).toEqual(["Filter A", "Filter B", "Filter D"]);
    expect((await names(`tags=${tag},${other.toUpperCase()}`)).names).toEqual([
      "Filter A",
      "Filter B",
      "Filter C",
      "Filter D",
    ]);
    expect((await names(`tags=${tag},${other}&status=pending,sold`)).names).toEqual([
      "Filter B",
      "Filter C",
      "Filter D",
    ]);
    expect((await names(`category=${category.toLowerCase()}`)).names).toEqual(["Filter A", "Filter C"]);
    expect((await names(`tags=${tag},${other}&organic=true`)).names).toEqual(["Filter A", "Filter D"]);
    expect((await names(`tags=${tag},${other}&organic=false`)).names).toEqual(["Filter B", "Filter C"]);

    const limited = await names(`tags=${tag},${other}&limit=3&sort=-name`);
    expect(limited.names).toEqual(["Filter D", "Filter C", "Filter B"]);
    expect(limited.total).toBe(4);
    expect(limited.page.hasMore).toBe(true);
    expect(limited.response.headers.get("x-total-count")).toBe("4");
    const rest = await names(`tags=${tag},${other}&limit=3&sort=-name&cursor=${limited.page.nextCursor}`);
    expect(rest.names).toEqual(["Filter A"]);
    expect(rest.page).toMatchObject({ hasMore: false, nextCursor: null, total: 4 });
  });

  it("pages 20 by default and up to 100", async () => {
    const tagged = unique("many");
    for (let i = 0; i < 21; i++) await create({ name: `Many ${i}`, tags: [{ name: tagged }] });
    const first = await names(`tags=${tagged}`);
    expect(first.names).toHaveLength(20);
    expect(first.page.hasMore).toBe(true);
    expect((await names(`tags=${tagged}&limit=100`)).names).toHaveLength(21);
    expect((await names(`tags=${tagged}&limit=1`)).names).toHaveLength(1);
  });

  it("answers 400 for a bad limit, sort, cursor or filter, and for a cursor used with another sort or filter", async () => {
    const { page } = await names(`tags=${tag}&limit=1&sort=name`);
    const cursor = page.nextCursor as string;
    const tampered = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(cursor, "base64url").toString()), i: "x" }),
    ).toString("base64url");
    for (const query of [
      "limit=0",
      "limit=101",
      "limit=abc",
      "limit=2.5",
      "sort=price",
      "sort=NAME",
      "cursor=not-a-cursor",
      "cursor=%25%25%25",
      `cursor=${tampered}`,
      `cursor=${cursor}&sort=-name`,
      `cursor=${cursor}&tags=somethingelse`,
      "status=available,eaten",
      "status=",
      "tags=a,,b",
      `tags=${"x".repeat(51)}`,
      "organic=maybe",
    ]) {
      const response = await get(`/cheeses?${query}`);
      expect(response.status, query).toBe(400);
      expect(await json(response)).toMatchObject({
        code: 400,
        type: "bad_request",
        message: expect.any(String),
      });
    }
  });
});

describe("findByStatus and findByTags", () => {
  it("findByStatus returns every cheese with any of the statuses, comma-separated or repeated", async () => {
    const tag = unique("by-status");
    const sold = await create({ name: unique("Sold"), status: "sold", tags: [{ name: tag }] });
    const pending = await create({ name: unique("Pending"), status: "pending", tags: [{ name: tag }] });
    const available = await create({ name: unique("Available"), tags: [{ name: tag }] });
    for (const query of ["status=sold,pending", "status=sold&status=pending"]) {
      const response = await get(`/cheeses/findByStatus?${query}`, auth.bearer);
      expect(response.status, query).toBe(200);
      const items: Cheese[] = await json(response);
      const ids = items.map((c) => c.id);
      expect(ids).toEqual(expect.arrayContaining([sold.id, pending.id]));
      expect(ids).not.toContain(available.id);
      expect(new Set(items.map((c) => c.status))).toEqual(new Set(["sold", "pending"]));
    }
  });

  it("findByStatus answers 400 for a missing or unknown status", async () => {
    for (const query of ["", "status=", "status=eaten", "status=sold,eaten"]) {
      const response = await get(`/cheeses/findByStatus?${query}`, auth.bearer);
      expect(response.status, query).toBe(400);
      expect(await json(response)).toMatchObject({ code: 400, type: "bad_request" });
    }
  });

  it("findByTags answers like GET /cheeses?tags= without pagination, marked deprecated", async () => {
    const tag = unique("by-tags");
    const other = unique("by-tags");
    const created = [
      await create({ name: unique("T1"), tags: [{ name: tag }] }),
      await create({ name: unique("T2"), tags: [{ name: other }] }),
      await create({ name: unique("T3"), tags: [{ name: "unrelated" }] }),
    ];
    const response = await get(`/cheeses/findByTags?tags=${tag},${other}`, auth.bearer);
    expect(response.status).toBe(200);
    expect(response.headers.get("deprecation")).toBe("true");
    const link = response.headers.get("link")!;
    expect(link).toMatch(/^<[^>]+\/v2\/cheeses\?tags=[^>]+>; rel="successor-version"$/);
    const items: Cheese[] = await json(response);
    expect(items.map((c) => c.id).sort()).toEqual([created[0]!.id, created[1]!.id].sort());

    const successor = await json(await fetch(/^<([^>]+)>/.exec(link)![1]!, { headers: auth.apiKey }));
    expect(successor.items.map((c: Cheese) => c.id).sort()).toEqual(items.map((c) => c.id).sort());
  });

  it("findByTags answers 400 for a missing, empty or over-50-character tag", async () => {
    for (const query of ["", "tags=", "tags=ok,", `tags=${"t".repeat(51)}`]) {
      const response = await get(`/cheeses/findByTags?${query}`, auth.bearer);
      expect(response.status, query).toBe(400);
      expect(await json(response)).toMatchObject({ code: 400, type: "bad_request" });
    }
    expect((await get(`/cheeses/findByTags?tags=${"t".repeat(50)}`, auth.bearer)).status).toBe(200);
  });
});
