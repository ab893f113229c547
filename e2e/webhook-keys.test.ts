import { createPublicKey, verify } from "node:crypto";
import { Parser } from "@asyncapi/parser";
import { type CheeseClient, createCheeseClient, unwrap } from "@cheese/client";
import { type ReceivedRequest, Receiver } from "@cheese/testing/receiver";
import { verifyAsymmetricSignature, verifyCheeseSignature } from "@cheese/webhook-signature";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { json, OPERATOR_KEY, type RunningSystem, startSystem } from "./support/system.ts";
import { everyKind } from "./support/webhooks.ts";

// biome-ignore lint/suspicious/noExplicitAny: served documents are walked generically
type Json = any;

/** The v1a signatures of a request, decoded. */
const v1a = (request: ReceivedRequest) =>
  String(request.headers["webhook-signature"])
    .split(" ")
    .filter((part) => part.startsWith("v1a,"))
    .map((part) => Buffer.from(part.slice(4), "base64"));

/**
 * What a receiver does with nothing but the published JWK set: the Standard Webhooks payload
 * `{webhook-id}.{webhook-timestamp}.{body}`, checked with node:crypto against each key.
 */
function verifiesWithJwksAlone(keys: Json[], request: ReceivedRequest): boolean {
  const signed = Buffer.concat([
    Buffer.from(`${request.headers["webhook-id"]}.${request.headers["webhook-timestamp"]}.`),
    request.rawBody,
  ]);
  const publicKeys = keys.map((jwk) => createPublicKey({ key: jwk, format: "jwk" }));
  return v1a(request).some((signature) => publicKeys.some((key) => verify(null, signed, key, signature)));
}

/**
 * Ed25519 signatures with published keys, and the event catalogue, on the system as `pnpm start`
 * runs it with two processes of every service (two notification replicas, two gateways).
 */
describe("webhook signing keys and the event catalogue", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let operator: CheeseClient;
  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({ env: { REPLICAS: "2", WEBHOOK_ALLOW_PRIVATE_URLS: "true" } });
    operator = createCheeseClient({ baseUrl: system.rootUrl, auth: { apiKey: OPERATOR_KEY } });
  });
  afterAll(async () => {
    await system?.stop();
    await receiver?.close();
  });

  /** The published key set, fetched without credentials from both addresses (they agree). */
  const publishedKeys = async (): Promise<Json[]> => {
    const wellKnown = await fetch(`${system.rootUrl}/.well-known/webhook-keys.json`);
    const underApi = await fetch(`${system.baseUrl}/webhooks/keys`);
    expect([wellKnown.status, underApi.status]).toEqual([200, 200]);
    const [a, b] = [await json(wellKnown), await json(underApi)];
    expect(b).toEqual(a);
    return a.keys;
  };
  const sendTest = async (webhookId: number) =>
    unwrap(operator.POST("/webhooks/{id}/test", { params: { path: { id: webhookId } } }));

  it("signs v1a for a registration that asks for ed25519: it verifies with nothing but the JWK set", async () => {
    const created = await unwrap(
      operator.POST("/webhooks", {
        body: {
          url: receiver.url("/ed25519"),
          events: ["webhook.test"],
          signatureAlgorithms: ["hmac-sha256", "ed25519"],
        },
      }),
    );
    expect(created.signatureAlgorithms).toEqual(["hmac-sha256", "ed25519"]);
    const keys = await publishedKeys();
    expect(keys).toEqual([
      {
        kty: "OKP",
        crv: "Ed25519",
        x: expect.any(String),
        kid: expect.any(String),
        alg: "EdDSA",
        use: "sig",
      },
    ]);
    expect(JSON.stringify(keys)).not.toContain('"d"');

    await sendTest(created.id);
    const [request] = await receiver.waitFor("/ed25519", 1);
    expect(String(request!.headers["webhook-signature"])).toMatch(/^v1,\S+ v1a,\S+$/);
    expect(verifiesWithJwksAlone(keys, request!)).toBe(true);
    expect(() => verifyAsymmetricSignature({ keys }, request!.rawBody, request!.headers)).not.toThrow();
    // Not the body as re-serialised, nor another event's id: the signature covers both.
    const tampered = { ...request!, rawBody: Buffer.from(`${request!.rawBody.toString()} `) };
    expect(verifiesWithJwksAlone(keys, tampered)).toBe(false);
    // X-Cheese-Signature stays the HMAC keyed with the secret.
    expect(() =>
      verifyCheeseSignature(created.secret, request!.rawBody, String(request!.headers["x-cheese-signature"])),
    ).not.toThrow();

    // A registration left at the default gets no v1a.
    const plain = await unwrap(
      operator.POST("/webhooks", { body: { url: receiver.url("/hmac"), events: ["webhook.test"] } }),
    );
    expect(plain.signatureAlgorithms).toEqual(["hmac-sha256"]);
    await sendTest(plain.id);
    const [hmacOnly] = await receiver.waitFor("/hmac", 1);
    expect(v1a(hmacOnly!)).toEqual([]);
  });

  it("refuses signatureAlgorithms that are not a non-empty subset of hmac-sha256 and ed25519 with 422", async () => {
    const call = (method: string, path: string, body: unknown) =>
      fetch(`${system.baseUrl}${path}`, {
        method,
        headers: { "x-api-key": OPERATOR_KEY, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const base = { url: receiver.url("/refused"), events: ["webhook.test"] };
    for (const [algorithms, field] of [
      [[], "signatureAlgorithms"],
      [["rsa-sha256"], "signatureAlgorithms[0]"],
      [["ed25519", "ed25519"], "signatureAlgorithms"],
      ["ed25519", "signatureAlgorithms"],
    ] as const) {
      const refused = await call("POST", "/webhooks", { ...base, signatureAlgorithms: algorithms });
      expect(refused.status, JSON.stringify(algorithms)).toBe(422);
      const body = await json(refused);
      expect(body).toMatchObject({ code: 422, type: "validation_error" });
      expect(body.errors.map((error: { field: string }) => error.field)).toContain(field);
    }
    const { id } = await json(await call("POST", "/webhooks", base));
    expect((await call("PATCH", `/webhooks/${id}`, { signatureAlgorithms: [] })).status).toBe(422);
    const patched = await call("PATCH", `/webhooks/${id}`, { signatureAlgorithms: ["ed25519"] });
    expect(patched.status).toBe(200);
    expect((await json(patched)).signatureAlgorithms).toEqual(["ed25519"]);
    await sendTest(id);
    const [request] = await receiver.waitFor("/refused", 1);
    // Only v1a in webhook-signature now; X-Cheese-Signature is still sent.
    expect(String(request!.headers["webhook-signature"])).toMatch(/^v1a,\S+$/);
    expect(request!.headers["x-cheese-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it("rotates the signing key with an overlap: both keys published, both sign, then only the new one", async () => {
    const rotatePath = `${system.baseUrl}/webhooks/keys/rotate`;
    expect((await fetch(rotatePath, { method: "POST" })).status).toBe(401);
    const [before] = await publishedKeys();
    const registration = await unwrap(
      operator.POST("/webhooks", {
        body: { url: receiver.url("/rotation"), events: ["webhook.test"], signatureAlgorithms: ["ed25519"] },
      }),
    );

    const rotated = await unwrap(operator.POST("/webhooks/keys/rotate", { body: { overlapSeconds: 3600 } }));
    expect(rotated.previousKid).toBe(before!.kid);
    expect(Date.parse(rotated.previousKeyExpiresAt) - Date.now()).toBeGreaterThan(3500_000);
    const during = await publishedKeys();
    expect(during.map((key) => key.kid)).toEqual([rotated.kid, before!.kid]);

    // Several deliveries, so both notification replicas sign some: every one carries both.
    for (let i = 0; i < 4; i++) await sendTest(registration.id);
    const requests = await receiver.waitFor("/rotation", 4);
    for (const request of requests) {
      expect(v1a(request)).toHaveLength(2);
      // A receiver still holding the set from before the rotation, and one with only the new key.
      expect(verifiesWithJwksAlone([before], request)).toBe(true);
      expect(verifiesWithJwksAlone([during[0]], request)).toBe(true);
    }

    // A rotation without overlap: the key before it stops signing and is no longer published.
    const again = await unwrap(operator.POST("/webhooks/keys/rotate", { body: { overlapSeconds: 0 } }));
    const after = await publishedKeys();
    expect(after.map((key) => key.kid)).toEqual([again.kid]);
    await sendTest(registration.id);
    const [, , , , last] = await receiver.waitFor("/rotation", 5);
    expect(v1a(last!)).toHaveLength(1);
    expect(verifiesWithJwksAlone(after, last!)).toBe(true);
    expect(verifiesWithJwksAlone(during, last!)).toBe(false);
  });

  it("serves the event catalogue and an AsyncAPI document that the AsyncAPI parser accepts, agreeing with OpenAPI", async () => {
    const catalogue = await fetch(`${system.baseUrl}/webhooks/event-types`);
    expect(catalogue.status).toBe(200);
    const { items } = await json(catalogue);
    expect(items.map((item: Json) => item.type).sort()).toEqual([...everyKind].sort());
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    for (const item of items) {
      expect(item.description, item.type).toMatch(/^sent when /);
      expect(item.example.type).toBe(item.type);
      const validate = ajv.compile(item.dataSchema);
      expect(validate(item.example.data), `${item.type}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      // A schema that checks something: an empty data object is not valid for any kind.
      expect(validate({}), item.type).toBe(false);
    }

    const served = await fetch(`${system.baseUrl}/asyncapi.json`);
    expect(served.status).toBe(200);
    const text = await served.text();
    const { document, diagnostics } = await new Parser().parse(text);
    expect(diagnostics.filter((diagnostic) => diagnostic.severity === 0)).toEqual([]);
    expect(document?.version()).toMatch(/^3\./);
    const messages = document!.allMessages().all();
    expect(messages.map((message) => message.name()).sort()).toEqual([...everyKind].sort());
    const asyncApi = JSON.parse(text);
    expect(Object.keys(asyncApi.components.schemas.DeliveryHeaders.properties)).toEqual(
      expect.arrayContaining(["X-Cheese-Signature", "webhook-id", "webhook-timestamp", "webhook-signature"]),
    );

    // The three descriptions are one: same kinds, same data schemas, same examples.
    const openApi = await json(await fetch(`${system.baseUrl}/openapi.json`));
    expect(Object.keys(openApi.webhooks).sort()).toEqual([...everyKind].sort());
    for (const item of items) {
      const message = Object.values<Json>(asyncApi.components.messages).find((m) => m.name === item.type);
      const { $schema: _, ...dataSchema } = item.dataSchema;
      expect(message.payload.properties.data, item.type).toEqual(dataSchema);
      expect(message.examples[0].payload, item.type).toEqual(item.example);
      const media = openApi.webhooks[item.type].post.requestBody.content["application/json"];
      expect(media.example, item.type).toEqual(item.example);
    }
  });
});
