import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { MatchCache } from "../src/router.ts";

/**
 * The gateway's router keeps each method + path's match: a request must be routed, and its params
 * read, exactly as Hono's own router does, whatever was kept or pushed out before it.
 */
describe("the gateway's router", () => {
  /** The gateway's shapes: middleware for every path, a static segment beside a parameter. */
  function app(router: MatchCache<never>) {
    const app = new Hono({ router });
    app.use(async (c, next) => {
      await next();
      c.header("x-seen", "yes");
    });
    app.get("/cheeses/findByStatus", (c) => c.text(`findByStatus ${c.req.query("status")}`));
    app.get("/cheeses/:cheeseId", (c) => c.text(`cheese ${c.req.param("cheeseId")}`));
    app.get("/cheeses/:cheeseId/images/:name", (c) => c.json({ ...c.req.param(), route: "image" }));
    app.post("/cheeses/:cheeseId", (c) => c.text(`posted ${c.req.param("cheeseId")}`));
    app.notFound((c) => c.text(`no route for ${c.req.path}`, 404));
    return app;
  }
  const text = async (answer: Response | Promise<Response>) => {
    const got = await answer;
    return `${got.status} ${got.headers.get("x-seen")} ${await got.text()}`;
  };

  it("answers each path's own params after the kept matches overflowed", async () => {
    const router = new MatchCache<never>(undefined, 3);
    const served = app(router);
    for (let id = 1; id <= 10; id++) {
      expect(await text(served.request(`/cheeses/${id}`))).toBe(`200 yes cheese ${id}`);
      expect(router.size).toBeLessThanOrEqual(3);
    }
    // Kept (the last three) and pushed out (the first ones) alike.
    for (const id of [10, 9, 1, 2, 10, 3, 8])
      expect(await text(served.request(`/cheeses/${id}`))).toBe(`200 yes cheese ${id}`);
    expect(await (await served.request("/cheeses/5/images/rind%20close-up.png")).json()).toEqual({
      cheeseId: "5",
      name: "rind close-up.png",
      route: "image",
    });
    expect(await (await served.request("/cheeses/6/images/a.png")).json()).toEqual({
      cheeseId: "6",
      name: "a.png",
      route: "image",
    });
  });

  it("routes a static segment beside a parameter, per method, and unknown paths to not found", async () => {
    const router = new MatchCache<never>();
    const served = app(router);
    for (let round = 0; round < 2; round++) {
      expect(await text(served.request("/cheeses/findByStatus?status=available"))).toBe(
        "200 yes findByStatus available",
      );
      expect(await text(served.request("/cheeses/findByStatus?status=sold"))).toBe(
        "200 yes findByStatus sold",
      );
      expect(await text(served.request("/cheeses/findByStatusX"))).toBe("200 yes cheese findByStatusX");
      expect(await text(served.request("/cheeses/7", { method: "POST" }))).toBe("200 yes posted 7");
      expect(await text(served.request("/cheeses/7"))).toBe("200 yes cheese 7");
      expect(await text(served.request("/cheeses/findByStatus", { method: "POST" }))).toBe(
        "200 yes posted findByStatus",
      );
      expect(await text(served.request("/orders/7"))).toBe("404 yes no route for /orders/7");
    }
    expect(router.size).toBe(6); // method + path: the query is not part of it
  });

  it("matches a long path every time without keeping it", async () => {
    const router = new MatchCache<never>();
    const served = app(router);
    const long = "x".repeat(300);
    expect(await text(served.request(`/cheeses/${long}`))).toBe(`200 yes cheese ${long}`);
    expect(router.size).toBe(0);
  });
});
