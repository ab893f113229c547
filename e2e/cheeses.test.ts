import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, operatorToken } from "./support/credentials.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

/** Every cheese write and read over HTTP against the whole system, as `pnpm start` runs it. */
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem();
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

const url = (path: string) => `${system.baseUrl}${path}`;
const jsonHeaders = () => ({ "content-type": "application/json", ...auth.bearer });

function send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return fetch(url(path), {
    method,
    headers: { ...jsonHeaders(), ...headers },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

async function create(body: Record<string, unknown>) {
  const response = await send("POST", "/cheeses", body);
  expect(response.status, JSON.stringify(body)).toBe(201);
  return { cheese: await json(response), etag: response.headers.get("etag")! };
}

const read = (id: number) => fetch(url(`/cheeses/${id}`), { headers: auth.apiKey });

describe("adding and reading", () => {
  it("adds a cheese with the spec's defaults, Location and ETag, and reads it back with the same ETag", async () => {
    const response = await send("POST", "/cheeses", { name: "Ossau-Iraty", category: { name: "Sheep" } });
    expect(response.status).toBe(201);
    const cheese = await json(response);
    expect(cheese).toMatchObject({
      name: "Ossau-Iraty",
      status: "available",
      organic: false,
      origin: null,
      photoUrls: [],
      tags: [],
      category: { id: expect.any(Number), name: "Sheep" },
    });
    expect(Date.parse(cheese.createdAt)).not.toBeNaN();
    expect(response.headers.get("location")).toBe(`${system.baseUrl}/cheeses/${cheese.id}`);
    expect(response.headers.get("etag")).toMatch(/^"\d+"$/);

    const again = await read(cheese.id);
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(cheese);
    expect(again.headers.get("etag")).toBe(response.headers.get("etag"));

    const unchanged = await fetch(url(`/cheeses/${cheese.id}`), {
      headers: { ...auth.apiKey, "if-none-match": response.headers.get("etag")! },
    });
    expect(unchanged.status).toBe(304);
  });

  it("gives ids that increase and are never reused, and one id per category or tag name", async () => {
    const a = (await create({ name: "Id Cheese A", tags: [{ name: "Raw-Milk" }], category: { name: "IDS" } }))
      .cheese;
    const b = (await create({ name: "Id Cheese B", tags: [{ name: "raw-milk" }], category: { name: "ids" } }))
      .cheese;
    expect(b.id).toBeGreaterThan(a.id);
    expect(b.id).toBeLessThan(2 ** 53);
    expect(b.tags[0].id).toBe(a.tags[0].id);
    expect(b.category.id).toBe(a.category.id);
    const other = (await create({ name: "Id Cheese C", tags: [{ name: "pasteurised" }] })).cheese;
    expect(other.tags[0].id).not.toBe(a.tags[0].id);

    expect((await send("DELETE", `/cheeses/${b.id}`, undefined, { "x-confirm-delete": "true" })).status).toBe(
      204,
    );
    const next = (await create({ name: "Id Cheese B", category: { name: "ids" } })).cheese;
    expect(next.id).toBeGreaterThan(other.id);
  });
});

describe("replacing with PUT", () => {
  it("replaces every field: omitted ones reset, createdAt kept, updatedAt and ETag move", async () => {
    const { cheese, etag } = await create({
      name: "Tomme de Savoie",
      category: { name: "Alpine" },
      tags: [{ name: "cow" }],
      origin: "FR",
      pricePerKg: 21.5,
      ageMonths: 3,
    });
    const response = await send("PUT", "/cheeses", {
      id: cheese.id,
      name: "Tomme de Savoie AOP",
      status: "pending",
      category: cheese.category,
      organic: true,
      createdAt: "ignored",
    });
    expect(response.status).toBe(200);
    const replaced = await json(response);
    expect(replaced).toEqual({
      id: cheese.id,
      name: "Tomme de Savoie AOP",
      category: cheese.category,
      photoUrls: [],
      tags: [],
      status: "pending",
      origin: null,
      organic: true,
      createdAt: cheese.createdAt,
      updatedAt: expect.any(String),
    });
    expect(replaced.updatedAt >= cheese.updatedAt).toBe(true);
    expect(response.headers.get("etag")).not.toBe(etag);
    expect(await json(await read(cheese.id))).toEqual(replaced);
  });

  it("answers 404 for an unknown id and 422 for a body without id, name or status", async () => {
    const missing = await send("PUT", "/cheeses", { id: 987654321, name: "Nobody", status: "available" });
    expect(missing.status).toBe(404);
    expect(await json(missing)).toMatchObject({ code: 404, type: "not_found" });

    const invalid = await send("PUT", "/cheeses", { name: "No id" });
    expect(invalid.status).toBe(422);
    const fields = (await json(invalid)).errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(["id", "status"]);
  });
});

describe("partial update: POST /cheeses/{cheeseId}", () => {
  it("changes only what the query parameters and the merged JSON body give; the query wins", async () => {
    const { cheese } = await create({
      name: "Morbier",
      origin: "FR",
      pricePerKg: 19,
      tags: [{ name: "ash" }],
    });

    const byQuery = await fetch(url(`/cheeses/${cheese.id}?name=Morbier%20Fermier&status=sold`), {
      method: "POST",
      headers: auth.bearer,
    });
    expect(byQuery.status).toBe(200);
    expect(await json(byQuery)).toMatchObject({
      name: "Morbier Fermier",
      status: "sold",
      origin: "FR",
      pricePerKg: 19,
      tags: cheese.tags,
    });

    const merged = await send("POST", `/cheeses/${cheese.id}?status=available`, {
      status: "pending",
      ageMonths: 4,
      origin: null,
    });
    expect(merged.status).toBe(200);
    const updated = await json(merged);
    expect(updated).toMatchObject({
      name: "Morbier Fermier",
      status: "available",
      ageMonths: 4,
      origin: null,
    });
    expect(await json(await read(cheese.id))).toEqual(updated);

    // A JSON content type on an empty body is no body, not a malformed one.
    const empty = await send("POST", `/cheeses/${cheese.id}?status=pending`);
    expect(empty.status).toBe(200);
    expect((await json(empty)).status).toBe("pending");
  });

  it("answers 400 for bad parameters, 422 for a bad body, 404 for an unknown cheese", async () => {
    const { cheese } = await create({ name: "Salers" });
    const badStatus = await fetch(url(`/cheeses/${cheese.id}?status=eaten`), {
      method: "POST",
      headers: auth.bearer,
    });
    expect(badStatus.status).toBe(400);
    expect(await json(badStatus)).toMatchObject({ code: 400, type: "bad_request" });
    const badId = await fetch(url("/cheeses/abc?status=sold"), { method: "POST", headers: auth.bearer });
    expect(badId.status).toBe(400);

    const badBody = await send("POST", `/cheeses/${cheese.id}`, { pricePerKg: -1, colour: "orange" });
    expect(badBody.status).toBe(422);
    expect((await json(badBody)).errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: "pricePerKg" }),
        { field: "colour", message: "unknown field" },
      ]),
    );
    const missing = await fetch(url("/cheeses/987654321?status=sold"), {
      method: "POST",
      headers: auth.bearer,
    });
    expect(missing.status).toBe(404);
  });
});

describe("names are unique within their category", () => {
  it("refuses a taken name (any case) on POST, PUT and partial update with 409, and frees renamed names", async () => {
    await create({ name: "Comté", category: { name: "Pressed" } });
    const second = (await create({ name: "Beaufort", category: { name: "Pressed" } })).cheese;

    const post = await send("POST", "/cheeses", { name: "COMTÉ", category: { name: "pressed" } });
    expect(post.status).toBe(409);
    expect(await json(post)).toMatchObject({ code: 409, type: "conflict", message: expect.any(String) });

    const put = await send("PUT", "/cheeses", {
      id: second.id,
      name: "comté",
      status: "available",
      category: { name: "Pressed" },
    });
    expect(put.status).toBe(409);
    const partial = await fetch(url(`/cheeses/${second.id}?name=Comt%C3%A9`), {
      method: "POST",
      headers: auth.bearer,
    });
    expect(partial.status).toBe(409);
    expect((await json(await read(second.id))).name).toBe("Beaufort");

    // Without a category it is another group; a rename frees the old name at once.
    await create({ name: "Comté" });
    const renamed = await fetch(url(`/cheeses/${second.id}?name=Beaufort%20d%27%C3%A9t%C3%A9`), {
      method: "POST",
      headers: auth.bearer,
    });
    expect(renamed.status).toBe(200);
    await create({ name: "Beaufort", category: { name: "Pressed" } });
  });

  it("lets exactly one of many concurrent POSTs of one name succeed", async () => {
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        send("POST", "/cheeses", {
          name: i % 2 ? "Race Reblochon" : "race REBLOCHON",
          category: { name: "Race" },
        }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(15);
  });
});

describe("concurrency for clients", () => {
  it("refuses a PUT or partial update with a stale If-Match (412) and changes nothing", async () => {
    const { cheese, etag } = await create({ name: "Saint-Nectaire", pricePerKg: 20 });
    const first = await send("POST", `/cheeses/${cheese.id}`, { pricePerKg: 22 }, { "if-match": etag });
    expect(first.status).toBe(200);
    const current = first.headers.get("etag")!;
    expect(current).not.toBe(etag);

    const stalePartial = await send(
      "POST",
      `/cheeses/${cheese.id}`,
      { pricePerKg: 99 },
      { "if-match": etag },
    );
    expect(stalePartial.status).toBe(412);
    expect(await json(stalePartial)).toMatchObject({ code: 412, type: "precondition_failed" });
    const stalePut = await send(
      "PUT",
      "/cheeses",
      { id: cheese.id, name: "Saint-Nectaire", status: "sold" },
      { "if-match": etag },
    );
    expect(stalePut.status).toBe(412);
    const now = await read(cheese.id);
    expect((await json(now)).pricePerKg).toBe(22);
    expect(now.headers.get("etag")).toBe(current);

    const fresh = await send(
      "PUT",
      "/cheeses",
      { id: cheese.id, name: "Saint-Nectaire", status: "sold", pricePerKg: 23 },
      { "if-match": current },
    );
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("etag")).toMatch(/^"\d+"$/);
  });

  it("returns the first response for a repeated Idempotency-Key and adds nothing; another body is 409", async () => {
    const key = `add-${Date.now()}`;
    const body = { name: "Idempotent Époisses", pricePerKg: 44, tags: [{ name: key }] };
    const first = await send("POST", "/cheeses", body, { "idempotency-key": key });
    expect(first.status).toBe(201);
    const created = await json(first);
    const repeat = await send("POST", "/cheeses", body, { "idempotency-key": key });
    expect(repeat.status).toBe(201);
    expect(await json(repeat)).toEqual(created);
    expect(repeat.headers.get("location")).toBe(first.headers.get("location"));

    const list = await json(await fetch(url(`/cheeses?tags=${key}`), { headers: auth.apiKey }));
    expect(list.total).toBe(1);

    const other = await send("POST", "/cheeses", { ...body, pricePerKg: 45 }, { "idempotency-key": key });
    expect(other.status).toBe(409);
    // Without the key the name is simply taken.
    expect((await send("POST", "/cheeses", body)).status).toBe(409);
  });
});

describe("Idempotency-Key behind a gateway time-out", () => {
  // Its own system with a short RPC_TIMEOUT, so the frozen catalogue makes the gateway give up fast.
  let quick: RunningSystem;
  let quickAuth: Awaited<ReturnType<typeof operatorHeaders>>;
  beforeAll(async () => {
    quick = await startSystem({ env: { RPC_TIMEOUT: "1s" } });
    quickAuth = await operatorHeaders(quick);
  });
  afterAll(async () => {
    await quick?.stop();
  });

  it("answers a retry after a 503 with the cheese created behind it (201, same cheese), and there is one", async () => {
    const key = `frozen-${Date.now()}`;
    const body = { name: "Frozen Fourme d'Ambert", pricePerKg: 27, tags: [{ name: key }] };
    const post = () =>
      fetch(`${quick.baseUrl}/cheeses`, {
        method: "POST",
        headers: { "content-type": "application/json", ...quickAuth.bearer, "idempotency-key": key },
        body: JSON.stringify(body),
      });
    const catalogue = quick.pids().catalogue ?? [];
    expect(catalogue.length).toBeGreaterThan(0);
    // The request reaches the frozen catalogue, the gateway gives up on it (503); once thawed,
    // the catalogue creates the cheese nobody hears about.
    for (const pid of catalogue) process.kill(pid, "SIGSTOP");
    let first: Response;
    try {
      first = await post();
    } finally {
      for (const pid of catalogue) process.kill(pid, "SIGCONT");
    }
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toMatch(/^\d+$/);

    // The thawed catalogue first works through what queued up while it was frozen; a retry that
    // reaches it before it has caught up may time out again (503, as any client would retry on).
    let retry = await post();
    for (let attempt = 1; retry.status === 503 && attempt < 10; attempt++) {
      expect(retry.headers.get("retry-after")).toMatch(/^\d+$/);
      retry = await post();
    }
    expect(retry.status).toBe(201);
    const cheese = await json(retry);
    expect(cheese).toMatchObject({ name: body.name, pricePerKg: 27, tags: [{ name: key }] });
    expect(retry.headers.get("location")).toBe(`${quick.baseUrl}/cheeses/${cheese.id}`);
    expect(retry.headers.get("etag")).toBe('"0"');

    const list = await json(
      await fetch(`${quick.baseUrl}/cheeses?tags=${key}`, { headers: quickAuth.apiKey }),
    );
    expect(list.total).toBe(1);
    expect(list.items).toEqual([cheese]);

    const replayed = await post();
    expect(replayed.status).toBe(201);
    expect(await json(replayed)).toEqual(cheese);
    const other = await fetch(`${quick.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...quickAuth.bearer, "idempotency-key": key },
      body: JSON.stringify({ ...body, pricePerKg: 28 }),
    });
    expect(other.status).toBe(409);
  });
});

describe("deleting", () => {
  it("needs X-Confirm-Delete: true (400 otherwise), then deletes for good (204, then 404)", async () => {
    const { cheese } = await create({ name: "Vacherin", category: { name: "Washed" } });
    const refusedHeaders: Record<string, string>[] = [
      {},
      { "x-confirm-delete": "false" },
      { "x-confirm-delete": "yes" },
    ];
    for (const headers of refusedHeaders) {
      const refused = await send("DELETE", `/cheeses/${cheese.id}`, undefined, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(400);
      expect(await json(refused)).toMatchObject({ code: 400, type: "bad_request" });
    }
    expect((await read(cheese.id)).status).toBe(200);

    const deleted = await send("DELETE", `/cheeses/${cheese.id}`, undefined, { "x-confirm-delete": "true" });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe("");
    expect((await read(cheese.id)).status).toBe(404);
    const again = await send("DELETE", `/cheeses/${cheese.id}`, undefined, { "x-confirm-delete": "true" });
    expect(again.status).toBe(404);
    // The name is free again.
    await create({ name: "Vacherin", category: { name: "Washed" } });
  });

  it("is 409 while the cheese has an approved order, and nothing changes", async () => {
    const { cheese } = await create({ name: "Ordered Mont d'Or", pricePerKg: 30 });
    const placed = await send("POST", "/store/order", {
      items: [{ cheeseId: cheese.id, quantity: 1 }],
      shippingAddress: { street: "1 Rue du Lac", city: "Annecy", country: "FR" },
    });
    expect(placed.status).toBe(201);
    const order = await json(placed);
    await expect
      .poll(
        async () =>
          (await json(await fetch(url(`/store/order/${order.id}`), { headers: auth.apiKey }))).status,
        { timeout: 15_000, interval: 200 },
      )
      .toBe("approved");

    const refused = await send("DELETE", `/cheeses/${cheese.id}`, undefined, { "x-confirm-delete": "true" });
    expect(refused.status).toBe(409);
    expect(await json(refused)).toMatchObject({ code: 409, type: "conflict" });
    expect(await json(await read(cheese.id))).toEqual(cheese);
  });

  it("answers 503 and deletes nothing when ordering cannot answer", async () => {
    const { cheese } = await create({ name: "Unconfirmed Munster" });
    const ordering = system.pids().ordering ?? [];
    for (const pid of ordering) process.kill(pid, "SIGSTOP");
    try {
      const started = Date.now();
      const response = await send("DELETE", `/cheeses/${cheese.id}`, undefined, {
        "x-confirm-delete": "true",
      });
      expect(response.status).toBe(503);
      expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      for (const pid of ordering) process.kill(pid, "SIGCONT");
    }
    expect((await read(cheese.id)).status).toBe(200);
  });
});

describe("access", () => {
  it("needs a cheesy_oauth token with write:cheeses for writes, and lets api_key and read tokens read", async () => {
    const { cheese } = await create({ name: "Access Abondance" });
    const body = JSON.stringify({ name: "Access Bleu" });
    const anonymous = await fetch(url("/cheeses"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("www-authenticate")).toBeTruthy();
    const withKey = await fetch(url("/cheeses"), {
      method: "POST",
      headers: { "content-type": "application/json", ...auth.apiKey },
      body,
    });
    expect(withKey.status).toBe(403);
    const reader = { authorization: `Bearer ${await operatorToken(system, "read:cheeses")}` };
    const readOnly = await fetch(url("/cheeses"), {
      method: "POST",
      headers: { "content-type": "application/json", ...reader },
      body,
    });
    expect(readOnly.status).toBe(403);

    expect((await fetch(url(`/cheeses/${cheese.id}`), { headers: reader })).status).toBe(200);
    expect((await fetch(url("/cheeses"), { headers: reader })).status).toBe(200);
    expect((await fetch(url("/cheeses"), { headers: auth.apiKey })).status).toBe(200);
    expect((await fetch(url(`/cheeses/${cheese.id}`))).status).toBe(401);
  });
});

describe("the OpenAPI document", () => {
  // biome-ignore lint/suspicious/noExplicitAny: reading an arbitrary JSON document
  let doc: any;
  beforeAll(async () => {
    doc = await json(await fetch(url("/openapi.json")));
  });
  const schema = (name: string) => doc.components.schemas[name];
  const resolve = (s: { $ref?: string }) => (s.$ref ? schema(s.$ref.split("/").pop()!) : s);
  const operation = (method: string, path: string) => doc.paths[path][method];
  // biome-ignore lint/suspicious/noExplicitAny: reading an arbitrary JSON document
  const param = (op: { parameters: any[] }, name: string, where: string) =>
    op.parameters.find((p) => p.name.toLowerCase() === name.toLowerCase() && p.in === where);
  const codes = (op: { responses: object }) => Object.keys(op.responses);

  it("describes Cheese, CheeseInput, Category, Tag, CheeseList and the upload result as the spec's tables", () => {
    const cheese = schema("Cheese");
    expect(cheese.required.sort()).toEqual(["id", "name", "status"]);
    expect(cheese.properties.id).toMatchObject({ type: "integer", format: "int64" });
    expect(cheese.properties.status.enum).toEqual(["available", "pending", "sold"]);
    expect(cheese.properties.origin.type).toEqual(["string", "null"]);
    expect(cheese.properties.pricePerKg).toMatchObject({
      type: "number",
      format: "float",
      exclusiveMinimum: 0,
    });
    expect(cheese.properties.ageMonths).toMatchObject({ type: "integer", minimum: 0, maximum: 120 });
    expect(cheese.properties.organic.type).toBe("boolean");
    expect(cheese.properties.photoUrls).toMatchObject({ type: "array", items: { type: "string" } });
    expect(cheese.properties.createdAt).toMatchObject({ type: "string", format: "date-time" });
    expect(cheese.properties.updatedAt).toMatchObject({ type: "string", format: "date-time" });
    expect(resolve(cheese.properties.category).properties).toMatchObject({
      id: { type: "integer", format: "int64" },
      name: { type: "string" },
    });
    expect(resolve(cheese.properties.tags.items).properties.id.format).toBe("int64");

    const input = schema("CheeseInput");
    expect(input.required).toEqual(["name"]);
    expect(Object.keys(input.properties.category.properties)).toEqual(["name"]);
    expect(Object.keys(input.properties.tags.items.properties)).toEqual(["name"]);
    expect(input.properties.status.enum).toEqual(["available", "pending", "sold"]);

    const list = schema("CheeseList");
    expect(list.properties).toMatchObject({
      items: { type: "array" },
      nextCursor: { type: ["string", "null"] },
      hasMore: { type: "boolean" },
      total: { type: "integer" },
    });
    expect(schema("ImageUploadResult").properties).toMatchObject({
      imageUrl: { type: "string", format: "uri" },
      thumbnailUrl: { type: "string", format: "uri" },
      size: { type: "integer" },
    });
  });

  it("describes each cheese operation's parameters, responses and security", () => {
    const list = operation("get", "/cheeses");
    expect(param(list, "cursor", "query").schema.type).toBe("string");
    expect(param(list, "limit", "query").schema).toMatchObject({
      type: "integer",
      minimum: 1,
      maximum: 100,
      default: 20,
    });
    expect(param(list, "sort", "query").schema).toMatchObject({
      enum: ["name", "-name", "createdAt", "-createdAt"],
      default: "name",
    });
    expect(param(list, "status", "query").schema.type).toBe("string");
    expect(resolve(list.responses["200"].content["application/json"].schema)).toEqual(schema("CheeseList"));
    expect(codes(list)).toContain("429");
    expect(list.security).toEqual([{ api_key: [] }, { cheesy_oauth: ["read:cheeses"] }]);

    const add = operation("post", "/cheeses");
    expect(add.requestBody.content["application/json"].schema.$ref).toMatch(/CheeseInput$/);
    expect(codes(add)).toEqual(expect.arrayContaining(["201", "409", "422"]));
    expect(add.security).toEqual([{ cheesy_oauth: ["write:cheeses"] }]);

    const replace = operation("put", "/cheeses");
    expect(resolve(replace.requestBody.content["application/json"].schema).required.sort()).toEqual([
      "id",
      "name",
      "status",
    ]);
    expect(codes(replace)).toEqual(expect.arrayContaining(["200", "404", "422"]));
    expect(replace.security).toEqual([{ cheesy_oauth: ["write:cheeses"] }]);

    const byStatus = operation("get", "/cheeses/findByStatus");
    expect(param(byStatus, "status", "query")).toMatchObject({
      required: true,
      schema: { type: "array", items: { enum: ["available", "pending", "sold"] } },
    });
    expect(codes(byStatus)).toEqual(expect.arrayContaining(["200", "400"]));
    expect(byStatus.security).toEqual([{ cheesy_oauth: ["read:cheeses"] }]);

    const byTags = operation("get", "/cheeses/findByTags");
    expect(byTags.deprecated).toBe(true);
    expect(param(byTags, "tags", "query")).toMatchObject({ required: true, schema: { type: "array" } });
    expect(codes(byTags)).toEqual(expect.arrayContaining(["200", "400"]));

    for (const method of ["get", "post", "delete"]) {
      const op = operation(method, "/cheeses/{cheeseId}");
      expect(param(op, "cheeseId", "path")).toMatchObject({
        required: true,
        schema: { type: "integer", format: "int64", minimum: 1 },
      });
      expect(codes(op)).toContain("404");
    }
    expect(operation("get", "/cheeses/{cheeseId}").security).toContainEqual({ api_key: [] });
    const partial = operation("post", "/cheeses/{cheeseId}");
    expect(param(partial, "name", "query").schema.type).toBe("string");
    expect(param(partial, "status", "query").schema.enum).toEqual(["available", "pending", "sold"]);
    expect(codes(partial)).toEqual(expect.arrayContaining(["200", "404", "422"]));
    const remove = operation("delete", "/cheeses/{cheeseId}");
    expect(param(remove, "X-Confirm-Delete", "header")).toMatchObject({
      required: true,
      schema: { type: "boolean" },
    });
    expect(codes(remove)).toEqual(expect.arrayContaining(["204", "404", "409"]));

    const upload = operation("post", "/cheeses/{cheeseId}/uploadImage");
    const form = upload.requestBody.content["multipart/form-data"].schema;
    expect(form.required).toEqual(["file"]);
    expect(form.properties).toMatchObject({
      file: { type: "string", format: "binary" },
      caption: { type: "string" },
      isPrimary: { type: "boolean", default: false },
    });
    expect(codes(upload)).toEqual(expect.arrayContaining(["200", "413", "415"]));
    expect(upload.security).toEqual([{ cheesy_oauth: ["write:cheeses"] }]);

    const inventory = operation("get", "/store/inventory");
    expect(inventory.security).toContainEqual({ api_key: [] });
    expect(resolve(inventory.responses["200"].content["application/json"].schema).required.sort()).toEqual([
      "available",
      "pending",
      "sold",
    ]);
  });
});
