import { Receiver } from "@cheese/testing/receiver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayAndNotification, PUBLIC_URL } from "./support/gateway-in-process.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY } from "./support/system.ts";
import { everyKind } from "./support/webhooks.ts";

/** A response body as loosely typed JSON, for assertions. */
// biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
const read = (response: Response): Promise<any> => response.json();

/** The gateway and the notification service over one in-process bus, the webhook routes' two rooms. */
async function webhookSystem(env: Record<string, string>) {
  const { gateway, stop } = await gatewayAndNotification(env);
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    gateway.app.request(`/v2${path}`, {
      method,
      headers: {
        "x-api-key": OPERATOR_KEY,
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === "string" ? body : JSON.stringify(body) } : {}),
    });
  return { gateway, call, stop };
}

describe("webhook registrations over HTTP", () => {
  let system: Awaited<ReturnType<typeof webhookSystem>>;
  let receiver: Receiver;
  beforeAll(async () => {
    system = await webhookSystem({ WEBHOOK_ALLOW_PRIVATE_URLS: "true", WEBHOOK_TIMEOUT: "2s" });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
    await system?.stop();
  });

  const register = async (body: Record<string, unknown> = {}) => {
    const response = await system.call("POST", "/webhooks", {
      url: receiver.url("/hooks"),
      events: ["cheese.new_arrival"],
      ...body,
    });
    expect(response.status).toBe(201);
    return response;
  };

  it("refuses credentials in the URL with 422 on create and PATCH, even where private URLs are allowed", async () => {
    const withCredentials = receiver.url("/hooks").replace("http://", "http://user:pw@");
    const created = await system.call("POST", "/webhooks", {
      url: withCredentials,
      events: ["order.placed"],
    });
    expect(created.status).toBe(422);
    expect((await read(created)).errors).toEqual([
      { field: "url", message: "must not contain credentials (user:password@)" },
    ]);
    const { id } = await read(await register());
    const patched = await system.call("PATCH", `/webhooks/${id}`, { url: withCredentials });
    expect(patched.status).toBe(422);
    expect((await read(patched)).errors[0].field).toBe("url");
    expect((await read(await system.call("GET", `/webhooks/${id}`))).url).toBe(receiver.url("/hooks"));
  });

  it("creates a registration with a generated whsec_ secret that is shown only in the 201", async () => {
    const response = await register({ description: "stock alerts" });
    const created = await read(response);
    expect(Object.keys(created).sort()).toEqual([
      "auth",
      "createdAt",
      "description",
      "events",
      "failingSince",
      "filter",
      "id",
      "ordered",
      "previousSecretExpiresAt",
      "rateLimit",
      "secret",
      "signatureAlgorithms",
      "status",
      "statusReason",
      "statusSince",
      "updatedAt",
      "url",
    ]);
    expect(created).toMatchObject({
      url: receiver.url("/hooks"),
      events: ["cheese.new_arrival"],
      description: "stock alerts",
      ordered: false,
      status: "active",
      statusReason: null,
      statusSince: created.createdAt,
      failingSince: null,
      previousSecretExpiresAt: null,
      rateLimit: null,
      auth: null,
      updatedAt: created.createdAt,
    });
    expect(created.id).toBeGreaterThan(0);
    expect(created.secret).toMatch(/^whsec_/);
    expect(Buffer.from(created.secret.slice(6), "base64")).toHaveLength(32);
    expect(response.headers.get("location")).toBe(`${PUBLIC_URL}/v2/webhooks/${created.id}`);

    const fetched = await system.call("GET", `/webhooks/${created.id}`);
    expect(fetched.status).toBe(200);
    const text = await fetched.text();
    expect(text).not.toContain(created.secret);
    const { secret: _secret, ...withoutSecret } = created;
    expect(JSON.parse(text)).toEqual(withoutSecret);

    const list = await (await system.call("GET", "/webhooks?limit=100")).text();
    expect(list).not.toContain(created.secret);
    expect(JSON.parse(list).items).toContainEqual(withoutSecret);
  });

  it("keeps a secret given in whsec_ form, and generates a different one each time otherwise", async () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
    expect((await read(await register({ secret }))).secret).toBe(secret);
    const a = (await read(await register())).secret;
    const b = (await read(await register())).secret;
    expect(a).not.toBe(b);
  });

  it("answers 422 naming the field for unknown kinds, bad URLs, bad secrets and unknown fields", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: receiver.url(), events: ["order.placed", "cheese.melted"] }, "events[1]"],
      [{ url: receiver.url(), events: [] }, "events"],
      [{ url: "ftp://example.com/x", events: ["order.placed"] }, "url"],
      [{ url: "not a url", events: ["order.placed"] }, "url"],
      [{ url: receiver.url(), events: ["order.placed"], secret: "hunter2" }, "secret"],
      [{ url: receiver.url(), events: ["order.placed"], colour: "blue" }, "colour"],
      [{ events: ["order.placed"] }, "url"],
      [{ url: receiver.url(), events: ["order.placed"], rateLimit: { perSecond: 0 } }, "rateLimit.perSecond"],
      [
        { url: receiver.url(), events: ["order.placed"], rateLimit: { perSecond: 1001 } },
        "rateLimit.perSecond",
      ],
      [
        {
          url: receiver.url(),
          events: ["order.placed"],
          auth: { type: "headers", headers: { Connection: "x" } },
        },
        "auth.headers.Connection",
      ],
      [
        {
          url: receiver.url(),
          events: ["order.placed"],
          auth: { type: "headers", headers: { "X-Key": "a\r\nX-Injected: 1" } },
        },
        "auth.headers.X-Key",
      ],
      [
        {
          url: receiver.url(),
          events: ["order.placed"],
          auth: { type: "oauth2_client_credentials", clientId: "c" },
        },
        "auth.tokenUrl",
      ],
    ];
    for (const [body, field] of cases) {
      const response = await system.call("POST", "/webhooks", body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      const error = await read(response);
      expect(error).toMatchObject({ code: 422, type: "validation_error" });
      expect(error.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const malformed = await system.call("POST", "/webhooks", "{nope");
    expect(malformed.status).toBe(422);
  });

  it("ignores read-only id and createdAt in the create body", async () => {
    const created = await read(await register({ id: 999999, createdAt: "yesterday" }));
    expect(created.id).not.toBe(999999);
    expect(created.createdAt).not.toBe("yesterday");
  });

  it("lets only operator API keys in: 401 without or with an unknown key, 403 for tokens", async () => {
    const none = await system.gateway.app.request("/v2/webhooks");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBeTruthy();
    expect((await system.call("GET", "/webhooks", undefined, { "x-api-key": "guess" })).status).toBe(401);

    const client = await system.gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["read:orders", "write:orders"] },
      60,
    );
    const customer = await system.gateway.tokens.issue(
      {
        kind: "session",
        sub: "7",
        username: "alice",
        scopes: ["read:cheeses", "read:orders", "write:orders"],
      },
      60,
    );
    for (const token of [client.token, customer.token]) {
      const response = await system.gateway.app.request("/v2/webhooks", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ url: receiver.url(), events: ["order.placed"] }),
      });
      expect(response.status).toBe(403);
      expect(await read(response)).toMatchObject({ code: 403, type: "forbidden" });
    }
  });

  it("answers 404 for unknown registrations and 400 for malformed ids and parameters", async () => {
    for (const [method, path] of [
      ["GET", "/webhooks/987654"],
      ["DELETE", "/webhooks/987654"],
      ["GET", "/webhooks/987654/deliveries"],
      ["POST", "/webhooks/987654/test"],
      ["POST", "/webhooks/987654/replay"],
    ] as const) {
      const response = await system.call(method, path);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(await read(response)).toMatchObject({ code: 404, type: "not_found" });
    }
    for (const path of [
      "/webhooks/abc",
      "/webhooks/0",
      "/webhooks?limit=0",
      "/webhooks?limit=500",
      "/webhooks?cursor=garbage",
    ]) {
      const response = await system.call("GET", path);
      expect(response.status, path).toBe(400);
      expect(await read(response)).toMatchObject({ code: 400, type: "bad_request" });
    }
    const { id } = await read(await register());
    expect((await system.call("GET", `/webhooks/${id}/deliveries?status=lost`)).status).toBe(400);
  });

  it("deletes a registration: 204, then it is gone from reads and lists", async () => {
    const { id } = await read(await register());
    expect((await system.call("DELETE", `/webhooks/${id}`)).status).toBe(204);
    expect((await system.call("GET", `/webhooks/${id}`)).status).toBe(404);
    const list = await read(await system.call("GET", "/webhooks?limit=100"));
    expect(list.items.map((w: { id: number }) => w.id)).not.toContain(id);
    expect((await system.call("DELETE", `/webhooks/${id}`)).status).toBe(404);
  });

  it("paginates registrations with an opaque cursor, oldest first", async () => {
    for (let i = 0; i < 3; i++) await register();
    const all = (await read(await system.call("GET", "/webhooks?limit=100"))).items.map(
      (w: { id: number }) => w.id,
    );
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: { id: number }[]; nextCursor: string | null; hasMore: boolean } = await read(
        await system.call("GET", `/webhooks?limit=2${cursor ? `&cursor=${cursor}` : ""}`),
      );
      expect(page.items.length).toBeLessThanOrEqual(2);
      expect(page.hasMore).toBe(page.nextCursor !== null);
      seen.push(...page.items.map((w) => w.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all);
    expect([...all].sort((a, b) => a - b)).toEqual(all);
  });

  it("sends a test event (202 with its delivery id) and lists the delivery with its attempt", async () => {
    receiver.behave("/test-event", { status: 204 });
    const { id } = await read(await register({ url: receiver.url("/test-event"), events: ["order.placed"] }));
    const accepted = await system.call("POST", `/webhooks/${id}/test`);
    expect(accepted.status).toBe(202);
    const { deliveryId } = await read(accepted);
    expect(deliveryId).toBeGreaterThan(0);
    const [request] = await receiver.waitFor("/test-event", 1);
    expect(request!.headers["x-cheese-event"]).toBe("webhook.test");
    expect(request!.headers["x-cheese-delivery"]).toBe(String(deliveryId));

    await expect
      .poll(async () => (await read(await system.call("GET", `/webhooks/${id}/deliveries`))).items[0]?.status)
      .toBe("delivered");
    const page = await read(await system.call("GET", `/webhooks/${id}/deliveries?status=delivered`));
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({
      id: deliveryId,
      webhookId: id,
      eventId: JSON.parse(request!.body).id,
      eventType: "webhook.test",
      status: "delivered",
      deadLettered: false,
      attempts: [{ attempt: 1, round: 0, outcome: "succeeded", statusCode: 204, error: null }],
    });
    expect(page.items[0].attempts[0].durationMs).toBeGreaterThanOrEqual(0);
    const none = await read(await system.call("GET", `/webhooks/${id}/deliveries?status=dead_lettered`));
    expect(none).toEqual({ items: [], nextCursor: null, hasMore: false });
  });

  it("replays nothing when the dead letter queue is empty", async () => {
    const { id } = await read(await register());
    const response = await system.call("POST", `/webhooks/${id}/replay`);
    expect(response.status).toBe(202);
    expect(await read(response)).toEqual({ replayed: 0 });
    // A JSON content type on an empty body is no body, not a malformed one.
    const empty = await system.call("POST", `/webhooks/${id}/replay`, undefined, {
      "content-type": "application/json",
      "content-length": "0",
    });
    expect(empty.status).toBe(202);
  });

  it("changes a registration in place with PATCH: only the fields given, with the rules of creation", async () => {
    const { id, createdAt } = await read(await register({ description: "first" }));
    const response = await system.call("PATCH", `/webhooks/${id}`, {
      url: receiver.url("/moved"),
      events: ["order.placed", "order.placed", "order.shipped"],
    });
    expect(response.status).toBe(200);
    const changed = await read(response);
    expect(changed).toMatchObject({
      id,
      url: receiver.url("/moved"),
      events: ["order.placed", "order.shipped"],
      description: "first",
      createdAt,
      status: "active",
    });
    expect(Date.parse(changed.updatedAt)).toBeGreaterThanOrEqual(Date.parse(createdAt));
    expect(await read(await system.call("GET", `/webhooks/${id}`))).toEqual(changed);

    const cleared = await read(await system.call("PATCH", `/webhooks/${id}`, { description: null }));
    expect(cleared).toMatchObject({ description: null, url: receiver.url("/moved") });
    // Read-only fields of a registration read back are ignored, not refused.
    expect((await system.call("PATCH", `/webhooks/${id}`, { ...cleared, description: "again" })).status).toBe(
      200,
    );

    const refusals: [unknown, string][] = [
      [{ events: [] }, "events"],
      [{ events: ["order.exploded"] }, "events[0]"],
      [{ url: "ftp://example.com/x" }, "url"],
      [{ description: "x".repeat(501) }, "description"],
      [{ secret: `whsec_${Buffer.alloc(32, 1).toString("base64")}` }, "secret"],
    ];
    for (const [body, field] of refusals) {
      const refused = await system.call("PATCH", `/webhooks/${id}`, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect((await read(refused)).errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    expect((await system.call("PATCH", `/webhooks/${id}`, "{not json")).status).toBe(422);
    expect((await system.call("PATCH", "/webhooks/999999", { description: "x" })).status).toBe(404);
    expect((await system.call("PATCH", "/webhooks/abc", { description: "x" })).status).toBe(400);
  });

  it("pauses and resumes, saying why and since when", async () => {
    const { id } = await read(await register());
    const paused = await system.call("POST", `/webhooks/${id}/pause`);
    expect(paused.status).toBe(200);
    const body = await read(paused);
    expect(body).toMatchObject({ id, status: "paused", statusReason: "paused by an operator" });
    expect(Date.parse(body.statusSince)).toBeGreaterThan(0);
    expect(await read(await system.call("POST", `/webhooks/${id}/pause`))).toEqual(body);

    const resumed = await read(await system.call("POST", `/webhooks/${id}/resume`));
    expect(resumed).toMatchObject({ id, status: "active", statusReason: null, failingSince: null });
    expect(Date.parse(resumed.statusSince)).toBeGreaterThanOrEqual(Date.parse(body.statusSince));
    expect((await system.call("POST", "/webhooks/999999/pause")).status).toBe(404);
    expect((await system.call("POST", "/webhooks/999999/resume")).status).toBe(404);
  });

  it("rotates the secret: the new one is shown once, the previous one signs until the overlap ends", async () => {
    const { id, secret: first } = await read(await register());
    const response = await system.call("POST", `/webhooks/${id}/rotate-secret`, { overlapSeconds: 3600 });
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store");
    const rotated = await read(response);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(first);
    const expires = Date.parse(rotated.previousSecretExpiresAt);
    expect(expires - Date.now()).toBeGreaterThan(3590_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3600_000);
    const fetched = await system.call("GET", `/webhooks/${id}`);
    const text = await fetched.text();
    expect(text).not.toContain(rotated.secret);
    expect(JSON.parse(text).previousSecretExpiresAt).toBe(rotated.previousSecretExpiresAt);

    const chosen = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
    const noBody = await system.call("POST", `/webhooks/${id}/rotate-secret`);
    expect(noBody.status).toBe(200);
    const defaults = await read(noBody);
    expect(Date.parse(defaults.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(86_390_000);
    expect(
      await read(await system.call("POST", `/webhooks/${id}/rotate-secret`, { secret: chosen })),
    ).toMatchObject({ secret: chosen });
    for (const body of [
      { overlapSeconds: 604_801 },
      { overlapSeconds: -1 },
      { secret: "whsec_short" },
      { x: 1 },
    ]) {
      const refused = await system.call("POST", `/webhooks/${id}/rotate-secret`, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
    }
    expect((await system.call("POST", "/webhooks/999999/rotate-secret")).status).toBe(404);
  });

  it("validates a replay window: since before until, known statuses, no other field", async () => {
    const { id } = await read(await register());
    const ok = await system.call("POST", `/webhooks/${id}/replay`, {
      since: "2026-01-01T00:00:00Z",
      until: "2026-01-02T00:00:00+02:00",
      status: ["delivered", "dead_lettered"],
    });
    expect(ok.status).toBe(202);
    expect(await read(ok)).toEqual({ replayed: 0 });
    const refusals: [unknown, string][] = [
      [{ since: "2026-01-02T00:00:00Z", until: "2026-01-01T00:00:00Z" }, "since"],
      [{ since: "yesterday" }, "since"],
      [{ status: ["pending"] }, "status[0]"],
      [{ status: [] }, "status"],
      [{ window: "6h" }, "window"],
    ];
    for (const [body, field] of refusals) {
      const refused = await system.call("POST", `/webhooks/${id}/replay`, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(
        (await read(refused)).errors.map((e: { field: string }) => e.field),
        JSON.stringify(body),
      ).toContain(field);
    }
  });

  it("documents the operations and every event kind in the OpenAPI 3.1 webhooks section", async () => {
    const doc = await read(await system.gateway.app.request("/v2/openapi.json"));
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/webhooks"].post.security).toEqual([{ api_key: [] }]);
    for (const path of [
      "/webhooks",
      "/webhooks/{id}",
      "/webhooks/{id}/deliveries",
      "/webhooks/{id}/test",
      "/webhooks/{id}/replay",
      "/webhooks/{id}/pause",
      "/webhooks/{id}/resume",
      "/webhooks/{id}/rotate-secret",
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths["/webhooks/{id}"].patch.security).toEqual([{ api_key: [] }]);
    const disabled = doc.webhooks["webhook.disabled"].post;
    const disabledRef = disabled.requestBody.content["application/json"].schema.$ref as string;
    const disabledEnvelope = doc.components.schemas[disabledRef.split("/").pop()!];
    const disabledData =
      doc.components.schemas[(disabledEnvelope.properties.data.$ref as string).split("/").pop()!];
    expect(Object.keys(disabledData.properties).sort()).toEqual([
      "description",
      "disabled_at",
      "failing_since",
      "reason",
      "webhook_id",
    ]);
    expect(Object.keys(doc.paths["/webhooks/{id}/test"].post.responses)).toContain("202");
    expect(Object.keys(doc.webhooks).sort()).toEqual([...everyKind].sort());
    const shipped = doc.webhooks["order.shipped"].post;
    const schemaRef = shipped.requestBody.content["application/json"].schema.$ref as string;
    const envelope = doc.components.schemas[schemaRef.split("/").pop()!];
    expect(envelope.required).toEqual(expect.arrayContaining(["id", "type", "created_at", "data"]));
    const dataRef = envelope.properties.data.$ref as string;
    const data = doc.components.schemas[dataRef.split("/").pop()!];
    expect(Object.keys(data.properties).sort()).toEqual([
      "carrier",
      "estimated_delivery",
      "order_id",
      "tracking_number",
    ]);
    expect(data.properties.order_id.type).toBe("string");
    const headerNames = shipped.parameters.map((p: { name: string }) => p.name);
    expect(headerNames).toEqual(
      expect.arrayContaining([
        "X-Cheese-Signature",
        "X-Cheese-Event",
        "X-Cheese-Delivery",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
      ]),
    );
  });
});

describe("the SSRF guard at registration (private URLs not allowed)", () => {
  let system: Awaited<ReturnType<typeof webhookSystem>>;
  beforeAll(async () => {
    system = await webhookSystem({});
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("refuses loopback, private, link-local, metadata, mapped and unresolvable targets, and plain http", async () => {
    const refused = [
      "https://localhost/hooks",
      "https://127.0.0.1/hooks",
      "https://2130706433/hooks",
      "https://10.1.2.3/hooks",
      "https://192.168.0.10/hooks",
      "https://100.64.1.1/hooks",
      "https://169.254.169.254/latest/meta-data",
      "https://[::1]/hooks",
      "https://[fd00:ec2::254]/hooks",
      "https://[fe80::1]/hooks",
      "https://[::ffff:127.0.0.1]/hooks",
      "https://no-such-host.invalid/hooks",
      "http://93.184.216.34/hooks",
      // IPv4 carried in IPv6, and the special-purpose ranges of both registries
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hooks", // Teredo, client 127.0.0.1
      "https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/hooks", // Teredo, client 8.8.8.8
      "https://[::ffff:0:7f00:1]/hooks", // IPv4-translated 127.0.0.1
      "https://[::ffff:808:808]/hooks", // IPv4-mapped 8.8.8.8
      "https://[64:ff9b::808:808]/hooks", // NAT64
      "https://[2002:808:808::1]/hooks", // 6to4
      "https://[2606:4700::5efe:7f00:1]/hooks", // ISATAP, client 127.0.0.1
      "https://[2001:db8::1]/hooks", // documentation
      "https://[3fff::1]/hooks", // documentation
      "https://192.0.2.1/hooks", // documentation
      "https://198.18.0.1/hooks", // benchmarking
      "https://[2001:2::1]/hooks", // benchmarking
      "https://user:pw@93.184.216.34/hooks", // credentials
    ];
    for (const url of refused) {
      const response = await system.call("POST", "/webhooks", { url, events: ["order.placed"] });
      expect(response.status, url).toBe(422);
      const body = await read(response);
      expect(body.errors[0].field, url).toBe("url");
    }
  });

  it("applies the same guard when PATCH changes the URL", async () => {
    const created = await read(
      await system.call("POST", "/webhooks", {
        url: "https://93.184.216.34/hooks",
        events: ["order.placed"],
      }),
    );
    for (const url of [
      "https://127.0.0.1/hooks",
      "https://169.254.169.254/x",
      "http://93.184.216.34/hooks",
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hooks",
      "https://[::ffff:0:7f00:1]/hooks",
      "https://user:pw@93.184.216.34/hooks",
    ]) {
      const response = await system.call("PATCH", `/webhooks/${created.id}`, { url });
      expect(response.status, url).toBe(422);
      expect((await read(response)).errors[0].field).toBe("url");
    }
    expect((await read(await system.call("GET", `/webhooks/${created.id}`))).url).toBe(
      "https://93.184.216.34/hooks",
    );
  });

  it("accepts a public https address", async () => {
    const response = await system.call("POST", "/webhooks", {
      url: "https://93.184.216.34/hooks",
      events: ["order.placed"],
    });
    expect(response.status).toBe(201);
  });
});
