import { FormData, request } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { type RunningSystem, startSystem } from "./support/system.ts";

/**
 * PUBLIC_URL builds every URL the API stores or returns; a caller's Host header builds none, so
 * nobody can plant a host of their own in what other callers read.
 */
const PUBLIC_URL = "https://cheese.example";
const HOSTILE = { host: "evil.example" };
let system: RunningSystem;
let auth: Awaited<ReturnType<typeof operatorHeaders>>;

beforeAll(async () => {
  system = await startSystem({ env: { PUBLIC_URL } });
  auth = await operatorHeaders(system);
});
afterAll(async () => {
  await system?.stop();
});

/** A 1×1 PNG. */
const png = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

async function call(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
) {
  const response = await request(`${system.rootUrl}${path}`, {
    method: method as "GET",
    headers: {
      ...HOSTILE,
      ...auth.bearer,
      ...(options.body !== undefined && !(options.body instanceof FormData)
        ? { "content-type": "application/json" }
        : {}),
      ...options.headers,
    },
    ...(options.body !== undefined
      ? { body: options.body instanceof FormData ? options.body : JSON.stringify(options.body) }
      : {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  const body: any = response.headers["content-type"]?.includes("json")
    ? await response.body.json()
    : await response.body.text();
  return { status: response.statusCode, headers: response.headers, body };
}

describe("URLs the API stores and returns, with PUBLIC_URL set and a hostile Host header", () => {
  it("answers Location absolute at PUBLIC_URL", async () => {
    const created = await call("POST", "/v2/cheeses", { body: { name: `Public ${Date.now()}` } });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`${PUBLIC_URL}/v2/cheeses/${created.body.id}`);
  });

  it("stores image URLs at PUBLIC_URL, for every later reader", async () => {
    const cheese = (await call("POST", "/v2/cheeses", { body: { name: `Pictured ${Date.now()}` } })).body;
    const form = new FormData();
    form.set("file", new Blob([png], { type: "image/png" }), "p.png");
    const uploaded = await call("POST", `/v2/cheeses/${cheese.id}/uploadImage`, { body: form });
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.imageUrl).toMatch(new RegExp(`^${PUBLIC_URL}/v2/images/[0-9a-f-]+\\.png$`));
    expect(uploaded.body.thumbnailUrl).toMatch(
      new RegExp(`^${PUBLIC_URL}/v2/images/[0-9a-f-]+\\.thumb\\.webp$`),
    );
    const read = await call("GET", `/v2/cheeses/${cheese.id}`, { headers: { host: "another.example" } });
    expect(read.body.photoUrls).toEqual([uploaded.body.imageUrl]);
  });

  it("links the next page at PUBLIC_URL", async () => {
    for (let i = 0; i < 2; i++)
      await call("POST", "/v2/cheeses", { body: { name: `Linked ${Date.now()} ${i}` } });
    const page = await call("GET", "/v2/cheeses?limit=1&sort=name");
    expect(page.status).toBe(200);
    expect(page.headers.link).toMatch(
      new RegExp(`^<${PUBLIC_URL}/v2/cheeses\\?limit=1&sort=name&cursor=[^>]+>; rel="next"$`),
    );
  });

  it("publishes the OAuth endpoints at PUBLIC_URL, and it is the issuer of every token", async () => {
    const metadata = await call("GET", "/.well-known/oauth-authorization-server");
    expect(metadata.body).toMatchObject({
      issuer: PUBLIC_URL,
      authorization_endpoint: `${PUBLIC_URL}/oauth/authorize`,
      token_endpoint: `${PUBLIC_URL}/oauth/token`,
      revocation_endpoint: `${PUBLIC_URL}/oauth/revoke`,
      jwks_uri: `${PUBLIC_URL}/.well-known/jwks.json`,
    });
    const payload = auth.bearer.authorization!.split(".")[1]!;
    expect(JSON.parse(Buffer.from(payload, "base64url").toString()).iss).toBe(PUBLIC_URL);
  });
});
