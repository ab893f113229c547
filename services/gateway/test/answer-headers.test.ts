import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { catalogueRpc } from "@cheese/contracts";
import { createInProcessBroker, serveRpc } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { specPlanLimits } from "../src/config.ts";
import { plainAnswer, setAnswerHeader } from "../src/middleware/answer-headers.ts";
import { createGatewayServer } from "../src/server.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY, testGateway } from "./support.ts";

/** Serves `fetch` behind the gateway's real HTTP server; resolves to its origin and a stop. */
async function serveNode(
  fetch: Parameters<typeof createGatewayServer>[0],
): Promise<{ origin: string; stop: () => Promise<void> }> {
  const server: Server = createGatewayServer(fetch, { logger: createLogger("gateway-test", "silent") });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Who wins when an answer carries a header the middleware sets on every answer: the middleware
 * for `X-Request-Id` (set), the answer for the limit headers (`ifAbsent`). The same whether the
 * answer's headers are a plain object or `Headers`, and whether the request came through the node
 * server (the headers then go on Node's response) or `app.request`.
 */
describe("answer headers set after the handler", () => {
  const app = new Hono();
  app.use(async (c, next) => {
    await next();
    setAnswerHeader(c, "X-Request-Id", "current");
    setAnswerHeader(c, "X-Rate-Limit", "100", { ifAbsent: true });
    setAnswerHeader(c, "RateLimit-Limit", "10", { ifAbsent: true });
  });
  const own = { "X-Request-Id": "stale", "x-rate-limit": "7" };
  app.get("/plain", (c) => plainAnswer(c, '{"a":1}', 200, { "Content-Type": "application/json", ...own }));
  // A middleware that reads the answer's headers after the route: the plain object is then done with.
  app.get(
    "/plain-read",
    async (c, next) => {
      await next();
      expect(c.res.headers.get("x-rate-limit")).toBe("7");
    },
    (c) => plainAnswer(c, '{"a":1}', 200, { "Content-Type": "application/json", ...own }),
  );
  // One that reads its body (as the idempotency record does).
  app.get(
    "/plain-body",
    async (c, next) => {
      await next();
      expect(await c.res.clone().text()).toBe('{"a":1}');
    },
    (c) => plainAnswer(c, '{"a":1}', 200, { "Content-Type": "application/json", ...own }),
  );
  app.get("/plain-bare", (c) => plainAnswer(c, '{"a":1}', 200, { "Content-Type": "application/json" }));
  app.get("/headers", (c) => {
    for (const [name, value] of Object.entries(own)) c.header(name, value);
    return c.json({ a: 1 });
  });
  app.get("/fixed", () => Response.redirect("http://127.0.0.1:9/elsewhere", 302));

  let node: Awaited<ReturnType<typeof serveNode>>;
  beforeAll(async () => {
    node = await serveNode(app.fetch);
  });
  afterAll(() => node?.stop());

  const transports: [string, (path: string) => Promise<Response>][] = [
    ["through the node server", (path) => fetch(`${node.origin}${path}`, { redirect: "manual" })],
    ["in process (app.request)", async (path) => app.request(path)],
  ];

  it.each(transports)("keeps the answer's own limit headers and sets the request id, %s", async (_, get) => {
    const expected = {
      "/plain": { id: "current", limit: "7" },
      "/plain-read": { id: "current", limit: "7" },
      "/plain-body": { id: "current", limit: "7" },
      "/headers": { id: "current", limit: "7" },
      "/plain-bare": { id: "current", limit: "100" },
      "/fixed": { id: "current", limit: "100" },
    };
    for (const [path, { id, limit }] of Object.entries(expected)) {
      const answer = await get(path);
      expect(answer.headers.get("x-request-id"), path).toBe(id);
      expect(answer.headers.get("x-rate-limit"), path).toBe(limit);
      expect(answer.headers.get("ratelimit-limit"), path).toBe("10");
      if (path !== "/fixed") {
        expect(answer.headers.get("content-type"), path).toBe("application/json");
        expect(await answer.json(), path).toEqual({ a: 1 });
      }
    }
  });
});

/** The gateway's own answers through its HTTP server, as `pnpm start` serves them. */
describe("the gateway's answer headers through the node server", () => {
  const brie = { id: 5, name: "Brie", status: "available" as const, organic: false };
  const headers = { "x-api-key": OPERATOR_KEY };
  let gateway: Awaited<ReturnType<typeof testGateway>>;
  let node: Awaited<ReturnType<typeof serveNode>>;
  let writer: Record<string, string>;
  beforeAll(async () => {
    const broker = createInProcessBroker();
    const catalogue = broker.connect("catalogue");
    serveRpc(catalogue, catalogueRpc.getCheese, { queue: "catalogue" }, async () => ({
      cheese: brie,
      revision: 3,
    }));
    // The catalogue keeps the Idempotency-Key's record: a repeat of a key is answered as replayed.
    let created = 100;
    const byKey = new Map<
      string,
      { cheese: { id: number; name: string; status: "available"; organic: boolean }; revision: number }
    >();
    serveRpc(
      catalogue,
      catalogueRpc.createCheese,
      { queue: "catalogue" },
      async ({ fields, idempotency }) => {
        const earlier = idempotency && byKey.get(idempotency.key);
        if (earlier) return { ...earlier, replayed: true as const };
        const reply = {
          cheese: { id: ++created, name: fields.name, status: "available" as const, organic: false },
          revision: 1,
        };
        if (idempotency) byKey.set(idempotency.key, reply);
        return reply;
      },
    );
    // A clock that stands still: no bucket refills between two requests.
    const clock = new ManualClock("2026-11-24T12:00:00.000Z");
    gateway = await testGateway(broker.connect("gateway"), 1000, { rateLimits: specPlanLimits, clock });
    node = await serveNode(gateway.app.fetch);
    const { token } = await gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["write:cheeses"] },
      3600,
    );
    writer = { authorization: `Bearer ${token}` };
  });
  afterAll(async () => {
    await node?.stop();
    gateway?.cleanup();
  });

  it("answers a cheese with its own headers and every answer's, each once", async () => {
    const first = await fetch(`${node.origin}/v2/cheeses/5`, {
      headers: { ...headers, "x-request-id": "get-1" },
    });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual(brie);
    const second = await fetch(`${node.origin}/v2/cheeses/5`, {
      headers: { ...headers, "x-request-id": "get-2" },
    });
    await second.arrayBuffer();
    for (const [answer, id] of [
      [first, "get-1"],
      [second, "get-2"],
    ] as const) {
      expect(answer.headers.get("content-type")).toBe("application/json");
      expect(answer.headers.get("etag")).toBe('"3"');
      expect(answer.headers.get("x-request-id")).toBe(id);
      expect(answer.headers.get("x-content-type-options")).toBe("nosniff");
      // The operator key's plan: pro.
      expect(answer.headers.get("ratelimit-limit")).toBe("100");
      expect(answer.headers.get("x-rate-limit")).toBe("10000");
    }
    // Each answer carries its own request's count.
    const remaining = (answer: Response) => Number(answer.headers.get("ratelimit-remaining"));
    expect(remaining(second)).toBe(remaining(first) - 1);
    expect(second.headers.get("x-rate-limit-remaining")).toBe(String(remaining(second)));

    const unchanged = await fetch(`${node.origin}/v2/cheeses/5`, {
      headers: { ...headers, "if-none-match": '"3"', "x-request-id": "get-3" },
    });
    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get("etag")).toBe('"3"');
    expect(unchanged.headers.get("x-request-id")).toBe("get-3");
    expect(unchanged.headers.get("x-content-type-options")).toBe("nosniff");
    expect(remaining(unchanged)).toBe(remaining(second) - 1);

    const head = await fetch(`${node.origin}/v2/cheeses/5`, {
      method: "HEAD",
      headers: { ...headers, "x-request-id": "get-4" },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("etag")).toBe('"3"');
    expect(head.headers.get("x-request-id")).toBe("get-4");
    expect(head.headers.get("x-content-type-options")).toBe("nosniff");
    expect(remaining(head)).toBe(remaining(unchanged) - 1);
  });

  it("replays a create with the first answer's headers and this request's id and limits", async () => {
    const create = (id: string) =>
      fetch(`${node.origin}/v2/cheeses`, {
        method: "POST",
        headers: {
          ...writer,
          "content-type": "application/json",
          "idempotency-key": "headers-1",
          "x-request-id": id,
        },
        body: JSON.stringify({ name: "Morbier", status: "available" }),
      });
    const first = await create("create-1");
    expect(first.status).toBe(201);
    const again = await create("create-2");
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(await first.text());
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("location")).toBe(first.headers.get("location"));
    expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(again.headers.get("x-request-id")).toBe("create-2");
    expect(again.headers.get("x-content-type-options")).toBe("nosniff");
    expect(Number(again.headers.get("ratelimit-remaining"))).toBe(
      Number(first.headers.get("ratelimit-remaining")) - 1,
    );
  });
});
