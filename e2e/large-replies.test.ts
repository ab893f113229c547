import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Replies past NATS's 1 MiB payload limit (docs/architecture.md, "Replies of any size"): before,
 * such a reply was never sent, and every caller of that read waited 5 s for a 503.
 */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  // 5,000 creations in seconds: past the enterprise plan's 1,000 a second.
  system = await startSystem({ env: { RATE_LIMIT_PLANS: "enterprise=100000/unlimited" } });
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

const url = (path: string) => `${system.baseUrl}${path}`;

async function create(body: Record<string, unknown>): Promise<void> {
  const response = await fetch(url("/cheeses"), {
    method: "POST",
    headers: { "content-type": "application/json", ...auth.bearer },
    body: JSON.stringify(body),
  });
  if (response.status !== 201) throw new Error(`${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/** Runs `work(i)` for i in [0, count) with `concurrency` at a time. */
async function inParallel(count: number, concurrency: number, work: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

describe("replies over NATS's payload limit", () => {
  it("answers findByStatus and findByTags with all of 5,000 cheeses (3 MiB), as one correct JSON array", async () => {
    // Two 300-character photo URLs each bring the reply past three payloads with a quarter of
    // the creations plain cheeses would need (~170 bytes each).
    const count = 5_000;
    const photoUrls = (i: number) =>
      [1, 2].map((n) => `https://img.example/bulk/${i}/${n}/`.padEnd(300, "p"));
    await inParallel(count, 48, (i) =>
      create({
        name: `Bulk ${i}`,
        status: "pending",
        tags: [{ name: "bulk" }],
        pricePerKg: 12.5,
        photoUrls: photoUrls(i),
      }),
    );
    for (const path of ["/cheeses/findByStatus?status=pending", "/cheeses/findByTags?tags=bulk"]) {
      const started = Date.now();
      const response = await fetch(url(path), { headers: auth.bearer });
      expect(response.status, path).toBe(200);
      const text = await response.text();
      expect(Date.now() - started, path).toBeLessThan(5_000);
      expect(text.length).toBeGreaterThan(1_048_576 * 3);
      const cheeses = JSON.parse(text) as { id: number; name: string }[];
      expect(cheeses).toHaveLength(count);
      expect(new Set(cheeses.map((c) => c.name)).size).toBe(count);
    }
  }, 180_000);

  it("answers the lists with cheeses at the most one may weigh: 50 photo URLs of 2,048 characters", async () => {
    const photoUrls = (i: number) =>
      Array.from({ length: 50 }, (_, n) => `https://img.example/${i}/${n}/`.padEnd(2_048, "p"));
    await inParallel(12, 4, (i) => create({ name: `Heavy ${i}`, status: "sold", photoUrls: photoUrls(i) }));
    for (const path of ["/cheeses?status=sold&limit=100", "/cheeses/findByStatus?status=sold"]) {
      const response = await fetch(url(path), { headers: auth.bearer });
      expect(response.status, path).toBe(200);
      const body = await json(response);
      const items = (Array.isArray(body) ? body : body.items) as { photoUrls: string[] }[];
      expect(items, path).toHaveLength(12);
      expect(items.map((c) => [c.photoUrls.length, c.photoUrls[0]!.length])).toEqual(
        Array(12).fill([50, 2_048]),
      );
    }
  }, 60_000);
});
