import { createLogger } from "@cheese/service-kit";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { GatewayEnv } from "../src/env.ts";
import { observe } from "../src/middleware/observe.ts";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const traceparent = `00-${TRACE_ID}-b7ad6b7169203331-01`;

/** A gateway's observation in front of two routes, its log lines kept as parsed JSON. */
function observed() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger("gateway", "info", { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = new Hono<GatewayEnv>()
    .use(observe(logger))
    .get("/healthz", (c) => c.json({ status: "ok" }))
    .get("/v2/cheeses/:cheeseId", (c) => c.json({ id: Number(c.req.param("cheeseId")) }))
    .post("/v2/oops", (c) => {
      c.var.log().error(
        {
          authorization: "Bearer sekret-token",
          headers: { authorization: "Basic c2VrcmV0", "x-api-key": "k-123" },
        },
        "could not do it",
      );
      return c.json({ message: "failed" }, 500);
    });
  return { app, lines };
}

describe("the gateway's log lines", () => {
  it("writes one access line per request: its ids, trace id, method, path without the query, status and time", async () => {
    const { app, lines } = observed();
    const answer = await app.request("/v2/cheeses/7?fields=name", {
      headers: { "x-request-id": "req-1", traceparent },
    });
    expect(answer.status).toBe(200);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      service: "gateway",
      msg: "request",
      requestId: "req-1",
      correlationId: "req-1",
      traceId: TRACE_ID,
      method: "GET",
      path: "/v2/cheeses/7",
      status: 200,
    });
    expect(lines[0]?.ms).toEqual(expect.any(Number));
  });

  it("makes a request id when the caller's does not look like one, and the access line carries it", async () => {
    const { app, lines } = observed();
    const answer = await app.request("/v2/cheeses/7", { headers: { "x-request-id": "no spaces allowed" } });
    const id = answer.headers.get("x-request-id");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines[0]).toMatchObject({ requestId: id, correlationId: id, msg: "request" });
  });

  it("writes a probe's access line without a traceId field (probes make no span)", async () => {
    const { app, lines } = observed();
    const answer = await app.request("/healthz", { headers: { "x-request-id": "probe-1", traceparent } });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-request-id")).toBe("probe-1");
    expect(Object.keys(lines[0] ?? {})).toEqual([
      "level",
      "time",
      "service",
      "requestId",
      "correlationId",
      "method",
      "path",
      "status",
      "ms",
      "msg",
    ]);
  });

  it("binds the ids into a request's own lines and still masks credentials in them", async () => {
    const { app, lines } = observed();
    const answer = await app.request("/v2/oops", {
      method: "POST",
      headers: { "x-request-id": "req-2", traceparent },
    });
    expect(answer.status).toBe(500);
    const [failure, access] = lines;
    expect(failure).toMatchObject({
      level: 50,
      msg: "could not do it",
      requestId: "req-2",
      correlationId: "req-2",
      traceId: TRACE_ID,
      authorization: "[redacted]",
      headers: { authorization: "[redacted]", "x-api-key": "[redacted]" },
    });
    expect(access).toMatchObject({ msg: "request", requestId: "req-2", status: 500, path: "/v2/oops" });
    const written = JSON.stringify(lines);
    for (const secret of ["sekret-token", "c2VrcmV0", "k-123"]) expect(written).not.toContain(secret);
  });
});
