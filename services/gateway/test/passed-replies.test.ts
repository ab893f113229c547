import { catalogueRpc } from "@cheese/contracts";
import { createInProcessBroker, RemoteError, serveRpc } from "@cheese/messaging";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OPERATOR_KEY, testGateway } from "./support.ts";

const brie = { id: 5, name: "Brie", status: "available" as const, organic: false };
const comte = { id: 6, name: "Comté", status: "available" as const, tags: [{ id: 1, name: "hard" }] };

/**
 * Reads the gateway answers as the service encoded them (`passThrough`): the body is the JSON the
 * service checked against the response schema, the headers come from the reply's meta.
 */
describe("replies passed through the gateway", () => {
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  const headers = { "x-api-key": OPERATOR_KEY };
  beforeAll(async () => {
    const broker = createInProcessBroker();
    const catalogue = broker.connect("catalogue");
    serveRpc(catalogue, catalogueRpc.getCheese, { queue: "catalogue" }, async ({ cheeseId }) => {
      if (cheeseId !== brie.id)
        throw new RemoteError({ status: 404, type: "not_found", message: "no such cheese" });
      // A field the schema does not know (a read model's own) never reaches the caller.
      return { cheese: { ...brie, sortName: "brie" } as typeof brie, revision: 3 };
    });
    serveRpc(catalogue, catalogueRpc.listCheeses, { queue: "catalogue" }, async () => ({
      items: [brie, comte],
      nextCursor: "after-comte",
      hasMore: true,
      total: 9,
    }));
    gateway = await testGateway(broker.connect("gateway"));
  });
  afterAll(() => gateway.cleanup());

  it("answers a cheese with the catalogue's checked JSON, its ETag from the revision", async () => {
    const answer = await gateway.app.request("/v2/cheeses/5", { headers });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("application/json");
    expect(answer.headers.get("etag")).toBe('"3"');
    expect(await answer.text()).toBe(JSON.stringify(brie));

    const unchanged = await gateway.app.request("/v2/cheeses/5", {
      headers: { ...headers, "if-none-match": '"3"' },
    });
    expect(unchanged.status).toBe(304);
    const missing = await gateway.app.request("/v2/cheeses/4", { headers });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: 404, type: "not_found" });
  });

  it("answers a page as the catalogue encoded it, with X-Total-Count and Link from its meta", async () => {
    const answer = await gateway.app.request("/v2/cheeses?limit=2&sort=name", { headers });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("application/json");
    expect(answer.headers.get("x-total-count")).toBe("9");
    expect(answer.headers.get("link")).toBe(
      '<http://127.0.0.1:8080/v2/cheeses?limit=2&sort=name&cursor=after-comte>; rel="next"',
    );
    expect(await answer.json()).toEqual({
      items: [brie, comte],
      nextCursor: "after-comte",
      hasMore: true,
      total: 9,
    });
  });
});
