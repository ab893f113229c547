import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { extractTrace, metricsRegistry } from "@cheese/service-kit";
import { metricValue } from "@cheese/testing";
import { Receiver } from "@cheese/testing/receiver";
import { verifyWebhook } from "@cheese/webhook-signature";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deliveryHeaders, sendAttempt } from "../src/delivery/sender.ts";
import { generateWebhookSecret } from "../src/security/secrets.ts";

describe("one delivery attempt over HTTP", () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await Receiver.start();
  });
  afterAll(() => receiver.close());

  const secret = generateWebhookSecret();
  const body = JSON.stringify({
    id: "evt_1",
    type: "webhook.test",
    created_at: "2026-03-01T10:00:00.000Z",
    data: { message: "héllo ✓" },
  });
  const headers = deliveryHeaders({
    secrets: [secret],
    signatureAlgorithms: ["hmac-sha256"],
    signingKeys: [],
    body,
    eventId: "evt_1",
    eventType: "webhook.test",
    deliveryId: 77,
    timestampSeconds: Math.floor(Date.now() / 1000),
  });
  const send = (path: string, extra: Partial<Parameters<typeof sendAttempt>[0]> = {}) =>
    sendAttempt({ url: receiver.url(path), headers, body, timeoutMs: 1000, allowPrivate: true, ...extra });

  it("POSTs the exact bytes with both signatures, which the receiver-side helper verifies", async () => {
    const result = await send("/ok");
    expect(result).toMatchObject({ ok: true, statusCode: 200, error: null });
    const [request] = receiver.requests("/ok");
    expect(request!.method).toBe("POST");
    expect(request!.body).toBe(body);
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["x-cheese-event"]).toBe("webhook.test");
    expect(request!.headers["x-cheese-delivery"]).toBe("77");
    expect(verifyWebhook(secret, request!.rawBody, request!.headers)).toMatchObject({ id: "evt_1" });
    expect(() => verifyWebhook(generateWebhookSecret(), request!.rawBody, request!.headers)).toThrow();
  });

  it("sends the attempt's trace as traceparent and tracestate, and none when it has none", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    await send("/traced", { trace: extractTrace({ traceparent, tracestate: "cheese=1" }) });
    await send("/untraced");
    expect(receiver.requests("/traced")[0]!.headers).toMatchObject({ traceparent, tracestate: "cheese=1" });
    expect(receiver.requests("/untraced")[0]!.headers.traceparent).toBeUndefined();
  });

  it("counts every attempt once, by outcome, with its duration", async () => {
    const attempts = async () => {
      const text = await metricsRegistry.metrics();
      const outcomes = ["success", "http_error", "timeout", "connection_error", "refused"];
      return Object.fromEntries(
        outcomes.map((outcome) => [outcome, metricValue(text, "cheese_webhook_attempts_total", { outcome })]),
      );
    };
    const durations = async () =>
      metricValue(await metricsRegistry.metrics(), "cheese_webhook_attempt_duration_seconds_count");
    receiver.behave("/counted-500", { status: 500 });
    receiver.behave("/counted-302", { status: 302, headers: { location: receiver.url("/ok") } });
    receiver.behave("/counted-slow", { delayMs: 3000 });
    const before = await attempts();
    const durationsBefore = await durations();

    await send("/counted-ok");
    await send("/counted-ok");
    await send("/counted-500");
    await send("/counted-302");
    await send("/counted-slow", { timeoutMs: 100 });
    await sendAttempt({ url: "http://127.0.0.1:1/x", headers, body, timeoutMs: 1000, allowPrivate: true });
    await sendAttempt({ url: receiver.url("/ok"), headers, body, timeoutMs: 1000, allowPrivate: false });

    const after = await attempts();
    expect(Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!]))).toEqual({
      success: 2,
      http_error: 2,
      timeout: 1,
      connection_error: 1,
      refused: 1,
    });
    expect((await durations()) - durationsBefore).toBe(7);
  });

  it("counts only 2xx as success", async () => {
    receiver.behave("/created", { status: 201 });
    receiver.behave("/gone", { status: 410 });
    receiver.behave("/broken", { status: 500 });
    expect(await send("/created")).toMatchObject({ ok: true, statusCode: 201 });
    expect(await send("/gone")).toMatchObject({ ok: false, statusCode: 410, error: "receiver answered 410" });
    expect(await send("/broken")).toMatchObject({ ok: false, statusCode: 500 });
  });

  it("hands on the headers by which a failing receiver steers, as sent", async () => {
    receiver.behave("/busy", { status: 503, headers: { "retry-after": "120" } });
    receiver.behave("/abort", { status: 400, headers: { "webhook-delivery": "abort" } });
    receiver.behave("/fine", { status: 200, headers: { "retry-after": "120" } });
    expect(await send("/busy")).toMatchObject({ ok: false, statusCode: 503, retryAfter: "120" });
    const aborted = await send("/abort");
    expect(aborted).toMatchObject({ ok: false, statusCode: 400, webhookDelivery: "abort" });
    expect(aborted).not.toHaveProperty("retryAfter");
    expect(await send("/fine")).not.toHaveProperty("retryAfter");
  });

  it("refuses a URL carrying credentials without connecting (a registration older than the rule)", async () => {
    const withCredentials = receiver.url("/secret").replace("http://", "http://user:pw@");
    const result = await sendAttempt({
      url: withCredentials,
      headers,
      body,
      timeoutMs: 1000,
      allowPrivate: true,
    });
    expect(result).toMatchObject({
      ok: false,
      statusCode: null,
      error: expect.stringMatching(/credentials/),
    });
    expect(receiver.requests("/secret")).toEqual([]);
  });

  it("keeps the request as sent and the receiver's answer: its headers and the first 4 KiB of its body", async () => {
    receiver.behave("/answers", { status: 503, body: "é".repeat(3000), headers: { "x-why": "overloaded" } });
    const result = await send("/answers", {
      headers: { ...headers, authorization: "Bearer receiver-token", "x-api-key": "k-123" },
      credentialHeaders: ["X-Api-Key"],
    });
    expect(result).toMatchObject({ ok: false, statusCode: 503, error: "receiver answered 503" });
    expect(result.request).toMatchObject({
      url: receiver.url("/answers"),
      headers: {
        "webhook-id": "evt_1",
        "webhook-signature": headers["webhook-signature"],
        "content-length": String(Buffer.byteLength(body)),
        authorization: "[redacted]",
        "x-api-key": "[redacted]",
      },
    });
    // The receiver got the credentials themselves; only the record hides them.
    expect(receiver.requests("/answers")[0]!.headers.authorization).toBe("Bearer receiver-token");
    expect(result.response!.headers["x-why"]).toBe("overloaded");
    expect(result.response!.bodyTruncated).toBe(true);
    // 4096 bytes of two-byte characters: 2048 of them, none cut in half.
    expect(result.response!.body).toBe("é".repeat(2048));

    const ok = await send("/ok");
    expect(ok.response).toMatchObject({ body: "ok", bodyTruncated: false });
  });

  it("does not follow redirects", async () => {
    receiver.behave("/moved", { status: 302, headers: { location: receiver.url("/ok-after-redirect") } });
    expect(await send("/moved")).toMatchObject({
      ok: false,
      statusCode: 302,
      error: "redirect (302) not followed",
    });
    expect(receiver.requests("/ok-after-redirect")).toHaveLength(0);
  });

  it("gives up at the time-out", async () => {
    receiver.behave("/slow", { delayMs: 3000 });
    const result = await send("/slow", { timeoutMs: 200 });
    expect(result).toMatchObject({ ok: false, statusCode: null, error: "timed out after 200 ms" });
    expect(result.response).toBeUndefined();
    expect(result.request?.url).toBe(receiver.url("/slow"));
    expect(result.durationMs).toBeLessThan(2000);
  });

  it("reports a refused connection", async () => {
    const result = await sendAttempt({
      url: "http://127.0.0.1:1/x",
      headers,
      body,
      timeoutMs: 1000,
      allowPrivate: true,
    });
    expect(result).toMatchObject({ ok: false, statusCode: null, error: "connection refused" });
  });

  it("refuses private targets at delivery time unless they are allowed", async () => {
    const strict = { allowPrivate: false, timeoutMs: 1000, headers, body };
    const literal = await sendAttempt({ ...strict, url: "https://127.0.0.1:9/x" });
    expect(literal).toMatchObject({ ok: false, error: expect.stringMatching(/^refused: loopback/) });
    const byName = await sendAttempt({
      ...strict,
      url: "https://rebound.example.com/x",
      resolve: async () => [{ address: "10.0.0.8", family: 4 }],
    });
    expect(byName).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^refused: .*private address \(10\.0\.0\.8\)/),
    });
    const http = await sendAttempt({ ...strict, url: receiver.url("/ok") });
    expect(http).toMatchObject({ ok: false, error: "refused: URL is not https" });
  });
});

describe("connections to a receiver", () => {
  /** A receiver counting its connections; `dropSecond` drops the second request on a connection unanswered. */
  const start = async (dropSecond = false) => {
    const server = createServer((req, res) => {
      const seen = perSocket.get(req.socket) ?? 0;
      perSocket.set(req.socket, seen + 1);
      requests++;
      req.resume();
      req.on("end", () => {
        if (dropSecond && seen === 1) req.socket.destroy();
        else res.end("ok");
      });
    });
    const perSocket = new WeakMap<object, number>();
    let connections = 0;
    let requests = 0;
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const send = () =>
      sendAttempt({
        url: `http://127.0.0.1:${port}/hook`,
        headers: {},
        body: "{}",
        timeoutMs: 2000,
        allowPrivate: true,
      });
    return {
      send,
      counts: () => ({ connections, requests }),
      close: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  };

  it("keeps one connection open for successive attempts", async () => {
    const receiver = await start();
    try {
      for (let i = 0; i < 3; i++) expect(await receiver.send()).toMatchObject({ ok: true, statusCode: 200 });
      expect(receiver.counts()).toEqual({ connections: 1, requests: 3 });
    } finally {
      await receiver.close();
    }
  });

  it("sends again on a new connection when the kept one is closed under the request", async () => {
    const receiver = await start(true);
    try {
      expect(await receiver.send()).toMatchObject({ ok: true });
      expect(await receiver.send()).toMatchObject({ ok: true, statusCode: 200 });
      expect(receiver.counts()).toEqual({ connections: 2, requests: 3 });
    } finally {
      await receiver.close();
    }
  });
});
