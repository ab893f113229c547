import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem, waitUntilReady } from "./support/system.ts";

const cheddar = {
  name: "Montgomery's Cheddar",
  category: { name: "Hard" },
  tags: [{ name: "cow" }, { name: "clothbound" }],
  origin: "GB",
  pricePerKg: 42.5,
  ageMonths: 12,
};

let auth: Awaited<ReturnType<typeof operatorHeaders>>;
/** Processes per service: E2E_REPLICAS=2 runs this suite against two of each. */
const replicas = Number(process.env.E2E_REPLICAS ?? "1");

async function post(
  system: RunningSystem,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
) {
  return fetch(`${system.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth.bearer, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("walking skeleton: several processes over NATS, as pnpm start runs it", () => {
  let system: RunningSystem;
  beforeAll(async () => {
    // debug level: the test below reads the request's log lines in every service (a service's
    // line per answered request is at debug; the gateway's access line at info).
    system = await startSystem({ env: { LOG_LEVEL: "debug" } });
    auth = await operatorHeaders(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("runs the gateway and the catalogue each in a process of its own, ordering, customer and notification in a third (a container each; each its own under LAUNCH_MODE=separate)", async () => {
    const pids = system.pids();
    for (const service of ["gateway", "catalogue", "ordering", "customer", "notification"]) {
      expect(pids[service]?.length, service).toBe(replicas);
    }
    if (system.mode === "launcher" && process.env.LAUNCH_MODE === "separate") {
      // Log lines reach the launcher's output up to 100 ms after they are logged.
      await expect.poll(() => system.output()).toContain("running each service as its own process over NATS");
      expect(new Set(Object.values(pids).flat()).size).toBe(5 * replicas);
    } else if (system.mode === "launcher") {
      await expect
        .poll(() => system.output())
        .toContain(
          "running the services as processes over NATS (ordering, customer and notification share one)",
        );
      expect(pids.customer).toEqual(pids.ordering);
      expect(pids.notification).toEqual(pids.ordering);
      expect(new Set(Object.values(pids).flat()).size).toBe(3 * replicas);
    } else {
      expect(new Set(Object.values(pids).flat()).size).toBe(5 * replicas);
    }
  });

  it("creates a cheese and reads it back, and still reads it after the catalogue is SIGKILLed", async () => {
    const created = await post(system, "/cheeses", cheddar, { "x-request-id": "skeleton-create-1" });
    expect(created.status).toBe(201);
    expect(created.headers.get("x-request-id")).toBe("skeleton-create-1");
    const cheese = await json(created);
    expect(cheese).toMatchObject({
      ...cheddar,
      status: "available",
      organic: false,
      category: { name: "Hard" },
    });
    expect(cheese.id).toBeGreaterThan(0);
    expect(cheese.category.id).toBeGreaterThan(0);
    expect(created.headers.get("location")).toBe(`${system.baseUrl}/cheeses/${cheese.id}`);

    const read = await fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
    expect(read.status).toBe(200);
    expect(await json(read)).toEqual(cheese);

    const [catalogue] = system.pids().catalogue ?? [];
    process.kill(catalogue!, "SIGKILL");
    await expect
      .poll(
        () => {
          const now = system.pids().catalogue ?? [];
          return now.length === replicas && !now.includes(catalogue!);
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    await waitUntilReady(system.rootUrl, 30_000);

    const again = await fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(cheese);
  });

  it("refuses a second cheese of the same name in the same category, case-insensitively", async () => {
    const first = await post(system, "/cheeses", { name: "Brie de Meaux", category: { name: "Soft" } });
    expect(first.status).toBe(201);
    const second = await post(system, "/cheeses", { name: "brie DE meaux", category: { name: "soft" } });
    expect(second.status).toBe(409);
    expect(await second.json()).toMatchObject({ code: 409, type: "conflict" });
    const otherCategory = await post(system, "/cheeses", {
      name: "Brie de Meaux",
      category: { name: "Bloomy" },
    });
    expect(otherCategory.status).toBe(201);
  });

  it("answers malformed path parameters with 400 and a missing cheese with 404", async () => {
    for (const id of ["abc", "0", "-3", "1.5"]) {
      const response = await fetch(`${system.baseUrl}/cheeses/${id}`, { headers: auth.apiKey });
      expect(response.status, id).toBe(400);
      expect(await response.json()).toMatchObject({ code: 400, type: "bad_request" });
    }
    const missing = await fetch(`${system.baseUrl}/cheeses/987654321`, { headers: auth.apiKey });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 404, type: "not_found", message: expect.any(String) });
  });

  it("answers invalid bodies with 422 naming the field, and ignores read-only fields", async () => {
    const invalid = await post(system, "/cheeses", { name: "", pricePerKg: 0, ageMonths: 121 });
    expect(invalid.status).toBe(422);
    const body = await json(invalid);
    expect(body).toMatchObject({ code: 422, type: "validation_error" });
    expect(body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      "ageMonths",
      "name",
      "pricePerKg",
    ]);

    const unknown = await post(system, "/cheeses", { name: "Comté", colour: "yellow" });
    expect(unknown.status).toBe(422);
    expect((await json(unknown)).errors).toContainEqual({ field: "colour", message: "unknown field" });

    const malformed = await post(system, "/cheeses", "{not json");
    expect(malformed.status).toBe(422);

    const readOnly = await post(system, "/cheeses", { name: "Beaufort", id: 5, createdAt: "yesterday" });
    expect(readOnly.status).toBe(201);
    expect((await json(readOnly)).createdAt).not.toBe("yesterday");
  });

  it("carries the caller's X-Request-Id into the log lines of every service the request touches", async () => {
    const requestId = `trace-${Date.now()}`;
    const created = await post(
      system,
      "/cheeses",
      { name: `Traced ${requestId}` },
      { "x-request-id": requestId },
    );
    expect(created.status).toBe(201);
    const lines = (service: string) => linesWith(system.output(), requestId, service);
    await expect.poll(() => lines("catalogue").length > 0 && lines("gateway").length > 0).toBe(true);
    for (const line of [...lines("gateway"), ...lines("catalogue")]) {
      expect(JSON.parse(line.slice(line.indexOf("{")))).toMatchObject({ requestId });
    }
  });

  it("serves the OpenAPI 3.1 document and its rendering", async () => {
    const doc = await json(await fetch(`${system.baseUrl}/openapi.json`));
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/cheeses", "/cheeses/{cheeseId}"]));
    expect(doc.components.securitySchemes).toHaveProperty("cheesy_oauth");
    const docs = await fetch(`${system.rootUrl}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain("/v2/openapi.json");
  });

  it("answers unknown routes with a JSON 404 and always carries X-Request-Id", async () => {
    const response = await fetch(`${system.baseUrl}/nope`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 404, type: "not_found" });
    expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

/** JSON log lines of one service (its `service` field) naming `text`. */
function linesWith(output: string, text: string, service: string): string[] {
  return output.split("\n").filter((line) => {
    if (!line.includes(text) || !line.includes("{")) return false;
    try {
      return JSON.parse(line.slice(line.indexOf("{"))).service === service;
    } catch {
      return false;
    }
  });
}
