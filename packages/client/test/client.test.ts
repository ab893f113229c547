import { afterEach, describe, expect, it, vi } from "vitest";
import { CheeseApiError, createCheeseClient, unwrap } from "../src/index.ts";

/** A stand-in gateway: records every request and answers with `answer`. */
function gateway(answer: (request: Request, body: string) => Response | Promise<Response>) {
  const seen: { method: string; url: string; headers: Headers; body: string }[] = [];
  const fetch = async (request: Request) => {
    const body = await request.text();
    seen.push({ method: request.method, url: request.url, headers: request.headers, body });
    return answer(request, body);
  };
  return { seen, fetch };
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

const cheese = { id: 42, name: "Comté", status: "available" };
const token = (n: number, expiresIn = 3600) =>
  json({ access_token: `token-${n}`, token_type: "Bearer", expires_in: expiresIn, scope: "write:cheeses" });

describe("the client's addresses", () => {
  it("reaches the API under /v2 and the authorization server at the root from one base URL", async () => {
    const server = gateway(() => json({}));
    const client = createCheeseClient({ baseUrl: "https://cheese.example.com/", fetch: server.fetch });
    await client.GET("/store/inventory");
    await client.GET("/.well-known/oauth-authorization-server");
    await client.request("get", "/.well-known/jwks.json");
    expect(server.seen.map((r) => r.url)).toEqual([
      "https://cheese.example.com/v2/store/inventory",
      "https://cheese.example.com/.well-known/oauth-authorization-server",
      "https://cheese.example.com/.well-known/jwks.json",
    ]);
  });
});

describe("authentication", () => {
  afterEach(() => vi.useRealTimers());

  it("sends an API key, or a bearer token asked for before each request", async () => {
    const server = gateway(() => json(cheese));
    await createCheeseClient({ baseUrl: "http://gw", fetch: server.fetch, auth: { apiKey: "chs_k" } }).GET(
      "/store/inventory",
    );
    let session = "first";
    const bearer = createCheeseClient({
      baseUrl: "http://gw",
      fetch: server.fetch,
      auth: { bearer: () => session },
    });
    await bearer.GET("/store/inventory");
    session = "second";
    await bearer.GET("/store/inventory");
    expect(server.seen.map((r) => r.headers.get("x-api-key") ?? r.headers.get("authorization"))).toEqual([
      "chs_k",
      "Bearer first",
      "Bearer second",
    ]);
  });

  it("fetches a client-credentials token once for concurrent requests, and a new one when it nears expiry", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    let issued = 0;
    const server = gateway((request, body) => {
      if (request.url.endsWith("/oauth/token")) {
        expect(new URLSearchParams(body).get("grant_type")).toBe("client_credentials");
        expect(new URLSearchParams(body).get("scope")).toBe("read:cheeses write:cheeses");
        expect(request.headers.get("authorization")).toBe(`Basic ${btoa("ops:s3cr%C3%A9t")}`);
        return token(++issued, 3600);
      }
      return json(cheese);
    });
    const client = createCheeseClient({
      baseUrl: "http://gw",
      fetch: server.fetch,
      auth: {
        clientCredentials: {
          clientId: "ops",
          clientSecret: "s3crét",
          scopes: ["read:cheeses", "write:cheeses"],
        },
      },
    });
    await Promise.all(
      [1, 2, 3].map((id) => client.GET("/cheeses/{cheeseId}", { params: { path: { cheeseId: id } } })),
    );
    vi.setSystemTime(Date.now() + 3580_000); // 20 s before expiry: within the 30 s margin
    await client.GET("/store/inventory");
    const sent = server.seen.filter((r) => !r.url.endsWith("/oauth/token"));
    expect(server.seen.filter((r) => r.url === "http://gw/oauth/token")).toHaveLength(2);
    expect(sent.map((r) => r.headers.get("authorization"))).toEqual([
      "Bearer token-1",
      "Bearer token-1",
      "Bearer token-1",
      "Bearer token-2",
    ]);
  });

  it("replaces a token the API refuses, once, and sends the request again", async () => {
    let issued = 0;
    const server = gateway((request) => {
      if (request.url.endsWith("/oauth/token")) return token(++issued);
      return request.headers.get("authorization") === "Bearer token-1"
        ? json({ code: 401, type: "unauthorized", message: "token revoked" }, 401)
        : json(cheese, 201);
    });
    const client = createCheeseClient({
      baseUrl: "http://gw",
      fetch: server.fetch,
      auth: { clientCredentials: { clientId: "ops", clientSecret: "s" } },
    });
    const created = await unwrap(client.POST("/cheeses", { body: { name: "Comté" } }));
    expect(created).toEqual(cheese);
    const posts = server.seen.filter((r) => r.url === "http://gw/v2/cheeses");
    expect(posts.map((r) => [r.headers.get("authorization"), r.body])).toEqual([
      ["Bearer token-1", '{"name":"Comté"}'],
      ["Bearer token-2", '{"name":"Comté"}'],
    ]);
  });

  it("throws a typed error when the token endpoint refuses the client", async () => {
    const server = gateway(() =>
      json(
        {
          code: 401,
          type: "unauthorized",
          message: "unknown client or wrong secret",
          error: "invalid_client",
          error_description: "unknown client or wrong secret",
        },
        401,
        { "x-request-id": "req-1" },
      ),
    );
    const client = createCheeseClient({
      baseUrl: "http://gw",
      fetch: server.fetch,
      auth: { clientCredentials: { clientId: "ops", clientSecret: "wrong" } },
    });
    const error = await client.GET("/store/inventory").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheeseApiError);
    expect(error).toMatchObject({
      status: 401,
      type: "unauthorized",
      oauthError: "invalid_client",
      requestId: "req-1",
    });
  });
});

describe("writes and retries", () => {
  it("puts an Idempotency-Key on the writes that take one, and keeps it when the write is sent again", async () => {
    let answers = 0;
    const server = gateway((request) =>
      request.url.endsWith("/store/order") && answers++ === 0
        ? json({ code: 503, type: "service_unavailable", message: "try again" }, 503, { "retry-after": "0" })
        : json({ id: 7 }, 201),
    );
    const client = createCheeseClient({ baseUrl: "http://gw", fetch: server.fetch, maxRetryDelayMs: 1 });
    const body = {
      items: [{ cheeseId: 42, quantity: 1 }],
      shippingAddress: { street: "1 Rue", city: "Paris", country: "FR" },
    };
    await unwrap(client.POST("/store/order", { body }));
    await client.PUT("/cheeses", { body: { id: 42, name: "Comté", status: "available" } });
    const [first, again, put] = server.seen;
    expect(first!.headers.get("idempotency-key")).toMatch(/^[0-9a-f-]{36}$/);
    expect(again!.headers.get("idempotency-key")).toBe(first!.headers.get("idempotency-key"));
    expect(again!.body).toBe(first!.body);
    expect(put!.headers.has("idempotency-key")).toBe(false);
  });

  it("keeps an Idempotency-Key the caller chose", async () => {
    const server = gateway(() => json(cheese, 201));
    const client = createCheeseClient({ baseUrl: "http://gw", fetch: server.fetch });
    await client.POST("/cheeses", {
      body: { name: "Comté" },
      params: { header: { "Idempotency-Key": "mine-1" } },
    });
    expect(server.seen[0]!.headers.get("idempotency-key")).toBe("mine-1");
  });

  it("does not repeat a write without a key, and gives up after the retries it was allowed", async () => {
    const server = gateway(() => json({ code: 503, type: "service_unavailable", message: "down" }, 503));
    const client = createCheeseClient({
      baseUrl: "http://gw",
      fetch: server.fetch,
      maxRetryDelayMs: 1,
      retries: 2,
    });
    const put = await client.PUT("/cheeses", { body: { id: 42, name: "Comté", status: "available" } });
    expect(put.response.status).toBe(503);
    expect(server.seen).toHaveLength(1);
    const read = await client.GET("/store/inventory");
    expect(read.response.status).toBe(503);
    expect(server.seen).toHaveLength(4);
    await expect(unwrap(client.GET("/store/inventory"))).rejects.toMatchObject({
      status: 503,
      type: "service_unavailable",
    });
  });
});

describe("pagination and errors", () => {
  it("walks every page over nextCursor, keeping the filters", async () => {
    const pages: Record<string, unknown> = {
      "": { items: [{ id: 1 }, { id: 2 }], nextCursor: "c2", hasMore: true, total: 3 },
      c2: { items: [{ id: 3 }], nextCursor: null, hasMore: false, total: 3 },
    };
    const server = gateway((request) => json(pages[new URL(request.url).searchParams.get("cursor") ?? ""]));
    const client = createCheeseClient({ baseUrl: "http://gw", fetch: server.fetch });
    const ids: number[] = [];
    for await (const item of client.paginate("/cheeses", { query: { status: "available", limit: 2 } }))
      ids.push(item.id);
    expect(ids).toEqual([1, 2, 3]);
    expect(server.seen.map((r) => new URL(r.url).search)).toEqual([
      "?status=available&limit=2",
      "?status=available&limit=2&cursor=c2",
    ]);
  });

  it("reports a 422 with the fields it names", async () => {
    const server = gateway(() =>
      json(
        {
          code: 422,
          type: "validation_error",
          message: "request body failed validation",
          errors: [{ field: "name", message: "Required" }],
        },
        422,
      ),
    );
    const client = createCheeseClient({ baseUrl: "http://gw", fetch: server.fetch });
    const error = await unwrap(client.POST("/cheeses", { body: { name: "" } })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CheeseApiError);
    expect((error as CheeseApiError).fieldErrors).toEqual([{ field: "name", message: "Required" }]);
    expect((error as CheeseApiError).type).toBe("validation_error");
  });
});
