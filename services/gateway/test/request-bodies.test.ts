import type { AddressInfo } from "node:net";
import { catalogueRpc } from "@cheese/contracts";
import { createInProcessBroker, serveRpc } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatewayServer } from "../src/server.ts";
import { OPERATOR_CLIENT, testGateway } from "./support.ts";

const brie = { id: 7, name: "Brie", status: "available" as const, organic: false };

/**
 * What a route's JSON body is checked for before a service is asked, through the gateway's real
 * HTTP server (the body read from Node's request) and through `app.request` (the fetch body) alike:
 * a body that is not JSON, not sent as JSON, or not the declared shape is a 422 with the API's error
 * body, and the service never hears of it.
 */
describe("request bodies", () => {
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  let origin: string;
  let stop: () => Promise<void>;
  let token: string;
  const created: unknown[] = [];
  const patched: unknown[] = [];
  beforeAll(async () => {
    const broker = createInProcessBroker();
    const catalogue = broker.connect("catalogue");
    serveRpc(catalogue, catalogueRpc.createCheese, { queue: "catalogue" }, async (request) => {
      created.push(request);
      return { cheese: { ...brie, name: request.fields.name }, revision: 1 };
    });
    serveRpc(catalogue, catalogueRpc.updateCheese, { queue: "catalogue" }, async (request) => {
      patched.push(request.changes);
      return { cheese: brie, revision: 2 };
    });
    gateway = await testGateway(broker.connect("gateway"));
    ({ token } = await gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["write:cheeses"] },
      600,
    ));
    const server = createGatewayServer(gateway.app.fetch, { logger: createLogger("gateway-test", "silent") });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    stop = async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await gateway.cleanup();
    };
  });
  afterAll(() => stop?.());

  const ways = {
    "the HTTP server": (path: string, init: RequestInit) => fetch(`${origin}${path}`, init),
    "app.request": (path: string, init: RequestInit) => gateway.app.request(path, init) as Promise<Response>,
  };

  for (const [way, send] of Object.entries(ways)) {
    describe(`through ${way}`, () => {
      const post = (path: string, body: string | undefined, headers: Record<string, string>) =>
        send(path, { method: "POST", headers: { authorization: `Bearer ${token}`, ...headers }, body });
      const json = { "content-type": "application/json" };

      it("creates from a body of the declared shape, its defaults applied on the way to the catalogue", async () => {
        created.length = 0;
        const answer = await post(
          "/v2/cheeses",
          JSON.stringify({ name: "Brie", tags: [{ name: "soft" }] }),
          json,
        );
        expect(answer.status).toBe(201);
        expect(answer.headers.get("location")).toBe("http://127.0.0.1:8080/v2/cheeses/7");
        expect(answer.headers.get("etag")).toBe('"1"');
        expect(await answer.json()).toEqual(brie);
        expect(created).toEqual([
          { fields: { name: "Brie", tags: [{ name: "soft" }], status: "available", organic: false } },
        ]);
      });

      it("answers a body that breaks the schema with 422 naming each field, before the catalogue", async () => {
        created.length = 0;
        const answer = await post("/v2/cheeses", JSON.stringify({ name: "", colour: "blue" }), json);
        expect(answer.status).toBe(422);
        const body = (await answer.json()) as { errors: { field: string }[] };
        expect(body).toMatchObject({
          code: 422,
          type: "validation_error",
          message: "request body failed validation",
        });
        expect(body.errors.map((e) => e.field).sort()).toEqual(["colour", "name"]);
        expect(created).toEqual([]);
      });

      it("answers malformed JSON, a body sent as another type or with no type with 422 naming the body", async () => {
        created.length = 0;
        const malformed = await post("/v2/cheeses", '{"name": "Brie"', json);
        expect(malformed.status).toBe(422);
        expect(await malformed.json()).toEqual({
          code: 422,
          type: "validation_error",
          message: "request body is not valid JSON",
          errors: [{ field: "(body)", message: "malformed JSON" }],
        });
        const notJson = {
          code: 422,
          type: "validation_error",
          message: "request body must be JSON sent with Content-Type: application/json",
          errors: [{ field: "(body)", message: "expected application/json" }],
        };
        const text = await post("/v2/cheeses", JSON.stringify({ name: "Brie" }), {
          "content-type": "text/plain",
        });
        expect(text.status).toBe(422);
        expect(await text.json()).toEqual(notJson);
        const untyped = await send("/v2/cheeses", {
          method: "POST",
          headers: { authorization: `Bearer ${token}` },
          body: new TextEncoder().encode(JSON.stringify({ name: "Brie" })),
        });
        expect(untyped.status).toBe(422);
        expect(await untyped.json()).toEqual(notJson);
        // JSON with parameters, or a +json type, is JSON.
        const charset = await post("/v2/cheeses", JSON.stringify({ name: "Brie" }), {
          "content-type": "application/json; charset=utf-8",
        });
        expect(charset.status).toBe(201);
        expect(created).toHaveLength(1);
      });

      it("checks the Idempotency-Key and the path before the body", async () => {
        const badKey = await post("/v2/cheeses", "{", { ...json, "idempotency-key": "with space" });
        expect(badKey.status).toBe(400);
        const badPath = await post("/v2/cheeses/x", "{", json);
        expect(badPath.status).toBe(400);
        expect(await badPath.json()).toMatchObject({ code: 400, message: expect.stringContaining("path") });
      });

      it("takes no body where the body is optional, and checks one that is sent", async () => {
        patched.length = 0;
        expect((await post("/v2/cheeses/7", undefined, {})).status).toBe(200);
        // An empty body sent as JSON, as clients often send it, is no body.
        expect((await post("/v2/cheeses/7", "", { ...json, "content-length": "0" })).status).toBe(200);
        expect((await post("/v2/cheeses/7", JSON.stringify({ origin: "FR" }), json)).status).toBe(200);
        expect(patched).toEqual([{}, {}, { origin: "FR" }]);
        const wrong = await post("/v2/cheeses/7", JSON.stringify({ origin: 5 }), json);
        expect(wrong.status).toBe(422);
        expect(await wrong.json()).toMatchObject({ errors: [{ field: "origin" }] });
        const text = await post("/v2/cheeses/7", "origin=FR", { "content-type": "text/plain" });
        expect(text.status).toBe(422);
        expect(patched).toHaveLength(3);
      });
    });
  }
});
