import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { CheeseApiError, type CheeseClient, createCheeseClient, type Schemas, unwrap } from "@cheese/client";
import { freePort, tempDir } from "@cheese/testing";
import { Receiver } from "@cheese/testing/receiver";
import type { WebhookEnvelope } from "@cheese/webhook-signature";
import { serve } from "@hono/node-server";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookApp } from "../packages/webhook-signature/examples/hono.ts";
import { webhookServer } from "../packages/webhook-signature/examples/node-http.ts";
import { clientFiles, staleFiles } from "../scripts/generate-client.ts";
import { address } from "./support/orders.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY, type RunningSystem, startSystem } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const execFileAsync = promisify(execFile);
const run = (command: string, args: string[], cwd: string) =>
  execFileAsync(command, args, { cwd, env: { ...process.env, NODE_OPTIONS: "" } }).catch((error) => {
    throw new Error(`${command} ${args.join(" ")} failed: ${error.stdout ?? ""}${error.stderr ?? ""}`);
  });

/**
 * The system driven through @cheese/client, the typed client generated from the document the
 * gateway serves, as an integrator would use it; webhooks received by the receiver examples of
 * @cheese/webhook-signature.
 */
describe("@cheese/client against the running system", () => {
  let system: RunningSystem;
  let operator: CheeseClient;
  let operatorKey: CheeseClient;
  let receiver: Receiver;
  const closers: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    system = await startSystem({ env: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" } });
    operator = createCheeseClient({
      baseUrl: system.rootUrl,
      auth: { clientCredentials: { clientId: OPERATOR_CLIENT.id, clientSecret: OPERATOR_CLIENT.secret } },
    });
    operatorKey = createCheeseClient({ baseUrl: system.rootUrl, auth: { apiKey: OPERATOR_KEY } });
  });
  afterAll(async () => {
    for (const close of closers) await close();
    await receiver?.close();
    await system?.stop();
  });

  it("is generated from the document this gateway serves (else: pnpm generate:client)", async () => {
    const served = await (await fetch(`${system.baseUrl}/openapi.json`)).json();
    expect(staleFiles(await clientFiles(served))).toEqual([]);
  });

  it("creates cheeses with a client-credentials token, repeats a write by its Idempotency-Key, and pages through a list", async () => {
    const category = `Client ${randomUUID().slice(0, 8)}`;
    const created: Schemas["Cheese"][] = [];
    for (const name of ["Beaufort", "Comté", "Salers"]) {
      created.push(
        await unwrap(
          operator.POST("/cheeses", { body: { name, category: { name: category }, pricePerKg: 30 } }),
        ),
      );
    }
    expect(created.map((c) => c.category?.name)).toEqual([category, category, category]);

    const key = randomUUID();
    const body = { name: "Abondance", category: { name: category } };
    const first = await operator.POST("/cheeses", { body, params: { header: { "Idempotency-Key": key } } });
    const again = await operator.POST("/cheeses", { body, params: { header: { "Idempotency-Key": key } } });
    expect(first.response.status).toBe(201);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    expect(again.data?.id).toBe(first.data?.id);

    const listed: string[] = [];
    for await (const cheese of operator.paginate("/cheeses", {
      query: { category, limit: 2, sort: "name" },
    })) {
      listed.push(cheese.name);
    }
    expect(listed).toEqual(["Abondance", "Beaufort", "Comté", "Salers"]);
  });

  it("answers refusals as typed errors: 404, 422 with its fields, 401 for a wrong client secret", async () => {
    const missing = await unwrap(
      operatorKey.GET("/cheeses/{cheeseId}", { params: { path: { cheeseId: 9_000_000_000 } } }),
    ).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(CheeseApiError);
    expect(missing).toMatchObject({ status: 404, type: "not_found", requestId: expect.any(String) });

    const invalid = await unwrap(operator.POST("/cheeses", { body: { name: "", ageMonths: 500 } })).catch(
      (e: unknown) => e,
    );
    expect(invalid).toMatchObject({ status: 422, type: "validation_error" });
    expect((invalid as CheeseApiError).fieldErrors.map((f) => f.field).sort()).toEqual(["ageMonths", "name"]);

    const stranger = createCheeseClient({
      baseUrl: system.rootUrl,
      auth: { clientCredentials: { clientId: OPERATOR_CLIENT.id, clientSecret: "wrong" } },
    });
    await expect(stranger.GET("/store/inventory")).rejects.toMatchObject({
      status: 401,
      oauthError: "invalid_client",
    });
  });

  it("signs a customer up, logs in with a bearer token, issues an API key and reads with it; places an order", async () => {
    const anonymous = createCheeseClient({ baseUrl: system.rootUrl });
    const username = `client_${randomUUID().slice(0, 8)}`;
    const password = "correct horse battery";
    await unwrap(
      anonymous.POST("/customer", { body: { username, email: `${username}@example.com`, password } }),
    );
    const { token } = await unwrap(anonymous.POST("/customer/login", { body: { username, password } }));

    const customer = createCheeseClient({ baseUrl: system.rootUrl, auth: { bearer: token } });
    const me = await unwrap(customer.GET("/customer/{username}", { params: { path: { username } } }));
    expect(me).toMatchObject({ username, customerStatus: "bronze" });
    const issued = await unwrap(
      customer.POST("/customer/{username}/apiKeys", { params: { path: { username } } }),
    );

    const withKey = createCheeseClient({ baseUrl: system.rootUrl, auth: { apiKey: issued.key } });
    const inventory = await unwrap(withKey.GET("/store/inventory"));
    expect(inventory.available).toBeGreaterThanOrEqual(0);

    const cheese = await unwrap(
      operator.POST("/cheeses", { body: { name: `Tomme ${randomUUID()}`, pricePerKg: 18 } }),
    );
    const order = await unwrap(
      operator.POST("/store/order", {
        body: { items: [{ cheeseId: cheese.id, quantity: 2 }], shippingAddress: address },
      }),
    );
    expect(order).toMatchObject({ status: "placed", total: 36 });
  });

  it("reaches the authorization server's operations from the same base URL", async () => {
    const metadata = await unwrap(operatorKey.GET("/.well-known/oauth-authorization-server"));
    expect(metadata.token_endpoint).toMatch(/\/oauth\/token$/);
    const keys = await unwrap(operatorKey.GET("/.well-known/jwks.json"));
    expect(keys.keys.length).toBeGreaterThan(0);
  });

  it("delivers webhooks that the Hono and node:http receiver examples verify, and that standardwebhooks verifies too", async () => {
    const got: Record<string, WebhookEnvelope[]> = { hono: [], "node:http": [] };
    const listen: Record<string, (secret: string, port: number) => Promise<() => Promise<void>>> = {
      hono: async (secret, port) => {
        const server = serve({
          fetch: webhookApp(secret, (e) => void got.hono!.push(e)).fetch,
          port,
          hostname: "127.0.0.1",
        });
        await new Promise<void>((resolve) => server.once("listening", resolve));
        return () => new Promise<void>((resolve) => server.close(() => resolve()));
      },
      "node:http": async (secret, port) => {
        const server = webhookServer(secret, (e) => void got["node:http"]!.push(e));
        await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
        return () => new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
    for (const [name, start] of Object.entries(listen)) {
      // Registered first: the secret is only known from the registration's answer.
      const port = await freePort();
      const url = `http://127.0.0.1:${port}/webhooks/cheese`;
      const registration = await unwrap(
        operatorKey.POST("/webhooks", { body: { url, events: ["webhook.test"] } }),
      );
      closers.push(await start(registration.secret, port));
      const { deliveryId } = await unwrap(
        operatorKey.POST("/webhooks/{id}/test", { params: { path: { id: registration.id } } }),
      );
      expect(deliveryId, name).toBeGreaterThan(0);
    }
    await expect.poll(() => got.hono!.length).toBe(1);
    await expect.poll(() => got["node:http"]!.length).toBe(1);
    for (const events of Object.values(got)) expect(events[0]).toMatchObject({ type: "webhook.test" });

    // The same delivery, as it arrived, passes the reference Standard Webhooks implementation.
    const raw = await unwrap(
      operatorKey.POST("/webhooks", { body: { url: receiver.url("/raw"), events: ["webhook.test"] } }),
    );
    await unwrap(operatorKey.POST("/webhooks/{id}/test", { params: { path: { id: raw.id } } }));
    await expect.poll(() => receiver.requests("/raw").length).toBe(1);
    const [delivery] = receiver.requests("/raw");
    const headers = Object.fromEntries(
      ["webhook-id", "webhook-timestamp", "webhook-signature"].map((h) => [h, String(delivery!.headers[h])]),
    );
    expect(new Webhook(raw.secret).verify(delivery!.rawBody, headers)).toMatchObject({
      type: "webhook.test",
    });
  });
  it("installs from its published tarballs and works from plain JavaScript, type-checked with strict tsc", async () => {
    const dir = tempDir("client-install");
    closers.push(async () => dir.remove());
    const modules = join(dir.path, "node_modules");
    const pack = async (name: string) => {
      // `pnpm pack` is what `pnpm publish` uploads: prepack builds dist/ (JavaScript and .d.ts).
      const { stdout } = await run(
        "pnpm",
        ["pack", "--pack-destination", dir.path],
        join(repoRoot, "packages", name),
      );
      const tarball = stdout.trim().split("\n").pop()!;
      const target = join(modules, "@cheese", name);
      mkdirSync(target, { recursive: true });
      await run("tar", ["-xzf", tarball, "-C", target, "--strip-components=1"], dir.path);
      const manifest = JSON.parse(readFileSync(join(target, "package.json"), "utf8"));
      expect(manifest.private, name).toBeUndefined();
      expect(manifest.license, name).toBe("MIT");
      expect(JSON.stringify(manifest.exports), name).not.toContain("src/");
      const { stdout: files } = await run("tar", ["-tzf", tarball], dir.path);
      expect(
        files.split("\n").filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
        name,
      ).toEqual([]);
      expect(files, name).toContain("package/dist/index.d.ts");
      expect(files, name).toContain("package/LICENSE");
    };
    await Promise.all(["client", "webhook-signature"].map(pack));
    // What the packages depend on, as npm would install it (no registry needed here).
    symlinkSync(
      join(repoRoot, "packages", "client", "node_modules", "openapi-fetch"),
      join(modules, "openapi-fetch"),
    );
    mkdirSync(join(modules, "@types"), { recursive: true });
    symlinkSync(join(repoRoot, "node_modules", "@types", "node"), join(modules, "@types", "node"));

    writeFileSync(join(dir.path, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(
      join(dir.path, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          types: ["node"],
          outDir: "out",
        },
        files: ["integrator.ts"],
      }),
    );
    writeFileSync(
      join(dir.path, "integrator.ts"),
      `import { createCheeseClient, unwrap, type Schemas, type WebhookEvent } from "@cheese/client";
import { signWebhook, verifyWebhook } from "@cheese/webhook-signature";

const [baseUrl, clientId, clientSecret] = process.argv.slice(2) as [string, string, string];
const client = createCheeseClient({ baseUrl, auth: { clientCredentials: { clientId, clientSecret } } });
const created: Schemas["Cheese"] = await unwrap(client.POST("/cheeses", { body: { name: "Packed ${randomUUID()}" } }));
const read = await unwrap(client.GET("/cheeses/{cheeseId}", { params: { path: { cheeseId: created.id } } }));

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";
const body = JSON.stringify({ id: "evt_1", type: "webhook.test", created_at: new Date().toISOString(), data: {} });
const event = verifyWebhook(secret, body, signWebhook(secret, body, { id: "evt_1" })) as WebhookEvent<"webhook.test">;
console.log(JSON.stringify({ id: read.id, name: read.name, event: event.type }));
`,
    );
    await run(join(repoRoot, "node_modules", ".bin", "tsc"), ["-p", "."], dir.path);
    const { stdout } = await run(
      process.execPath,
      ["out/integrator.js", system.rootUrl, OPERATOR_CLIENT.id, OPERATOR_CLIENT.secret],
      dir.path,
    );
    expect(JSON.parse(stdout)).toMatchObject({
      id: expect.any(Number),
      name: expect.stringMatching(/^Packed /),
      event: "webhook.test",
    });
    // Three TypeScript compilations (each package's declarations, then the integrator's code):
    // about 10 s of CPU, minutes of wall time when the machine is shared.
  }, 300_000);
});
