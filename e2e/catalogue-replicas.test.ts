import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * Read-your-writes with two catalogue replicas: writes and reads are spread over both (NATS
 * queue group), each with its own read model, so a read often lands on the replica that did not
 * write. Every GET right after a 201 or 200 must see the change.
 */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem({ env: { REPLICAS: "2" } });
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

const url = (path: string) => `${system.baseUrl}${path}`;

async function write(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url(path), {
    method,
    headers: { "content-type": "application/json", ...auth.bearer, ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  expect(response.status, `${method} ${path}`).toBeLessThan(300);
  return response.status === 204 ? undefined : json(response);
}

async function read(path: string) {
  return fetch(url(path), { headers: auth.apiKey });
}

describe("read-your-writes across catalogue replicas", () => {
  it("runs two catalogue processes", () => {
    expect(system.pids().catalogue).toHaveLength(2);
  });

  it("sees every create, update, replacement and deletion in the very next GET", async () => {
    const tag = `ryw-${Date.now()}`;
    for (let i = 0; i < 30; i++) {
      const created = await write("POST", "/cheeses", { name: `Replica ${i}`, tags: [{ name: tag }] });
      expect(await json(await read(`/cheeses/${created.id}`))).toEqual(created);
      const page = await json(await read(`/cheeses?tags=${tag}&limit=100`));
      expect(page.total, `list after create ${i}`).toBe(i + 1);

      const updated = await write("POST", `/cheeses/${created.id}?status=sold`, { pricePerKg: 10 + i });
      expect(await json(await read(`/cheeses/${created.id}`))).toEqual(updated);

      const replaced = await write("PUT", "/cheeses", {
        id: created.id,
        name: `Replica ${i} (replaced)`,
        status: "pending",
        tags: [{ name: tag }],
      });
      const afterPut = await read(`/cheeses/${created.id}`);
      expect(await json(afterPut)).toEqual(replaced);

      if (i % 3 === 0) {
        await write("DELETE", `/cheeses/${created.id}`, undefined, { "x-confirm-delete": "true" });
        expect((await read(`/cheeses/${created.id}`)).status, `read after delete ${i}`).toBe(404);
        await write("POST", "/cheeses", { name: `Replica ${i} again`, tags: [{ name: tag }] });
      }
    }
    // About 250 requests one after another; on two loaded cores that takes more than a minute.
  }, 240_000);

  it("sees a write made through one gateway replica in the very next GET and list through the other (read caches)", async () => {
    // Each gateway keeps the cheese's reply (a GET first, through each), then a write through one
    // and at once a read through the other: its cache must not answer with the old cheese.
    const ports = system
      .output()
      .match(/gateways on ports ([\d, ]+) behind/)?.[1]
      ?.split(", ");
    expect(ports, "the gateways' ports in the launcher's output").toHaveLength(2);
    const [one, other] = ports!.map((port) => `http://127.0.0.1:${port}/v2`);
    const readAt = async (base: string, id: number) => {
      const response = await fetch(`${base}/cheeses/${id}`, { headers: auth.apiKey });
      return { status: response.status, etag: response.headers.get("etag"), body: await response.text() };
    };
    const tag = `cached-${Date.now()}`;
    const created = await write("POST", "/cheeses", { name: `Cached ${Date.now()}`, tags: [{ name: tag }] });
    const listAt = async (base: string) => {
      const response = await fetch(`${base}/cheeses?tags=${tag}`, { headers: auth.apiKey });
      return (await json(response)).items;
    };
    for (let i = 0; i < 40; i++) {
      const [writer, reader] = i % 2 === 0 ? [one!, other!] : [other!, one!];
      await readAt(writer, created.id);
      await readAt(reader, created.id);
      // The second read, with nothing written since, is the one a cache answers.
      const before = await readAt(reader, created.id);
      await listAt(reader);
      const response = await fetch(
        `${writer}/cheeses/${created.id}?name=${encodeURIComponent(`Cached ${i} ${Date.now()}`)}`,
        {
          method: "POST",
          headers: auth.bearer,
        },
      );
      expect(response.status, `update ${i}`).toBe(200);
      const updated = await response.text();
      const after = await readAt(reader, created.id);
      expect(after.body, `read after update ${i}`).toBe(updated);
      expect(after.etag, `ETag after update ${i}`).toBe(response.headers.get("etag"));
      expect(after.etag).not.toBe(before.etag);
      expect(await listAt(reader), `list after update ${i}`).toEqual([JSON.parse(updated)]);
    }
  }, 120_000);

  it("keeps the inventory current after each write", async () => {
    const before = await json(await read("/store/inventory"));
    for (let i = 0; i < 10; i++) {
      await write("POST", "/cheeses", { name: `Counted ${i}`, status: "sold" });
      const now = await json(await read("/store/inventory"));
      expect(now.sold, `after create ${i}`).toBe(before.sold + i + 1);
    }
  });
});
