import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders, registerAndLogin, uniqueUsername } from "./support/credentials.ts";
import { busAs } from "./support/nats-identity.ts";
import { json, type RunningSystem, startSystem } from "./support/system.ts";

type MessageBus = Awaited<ReturnType<typeof busAs>>;
type DeliveredEvent = { subject: string; payload: unknown };

/** Customer accounts over HTTP: registration, batches, reading, replacing, tiers and events. */
describe("customers", () => {
  let system: RunningSystem;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let bus: MessageBus;
  const published: DeliveredEvent[] = [];

  beforeAll(async () => {
    // The spec's rate plans (customers are free: bursts of 10); registrations come from one IP,
    // which the default test configuration lets through.
    system = await startSystem({ env: { RATE_LIMIT_PLANS: "" } });
    operator = await operatorHeaders(system);
    bus = await busAs(system, "ordering");
    bus.consume({
      durable: `e2e-customers-${randomUUID().slice(0, 8)}`,
      subjects: ["events.customer.>"],
      handler: async (event) => {
        published.push(event);
      },
    });
  });
  afterAll(async () => {
    await bus?.close();
    await system?.stop();
  });

  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${system.baseUrl}${path}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
  const newCustomer = (overrides: Record<string, unknown> = {}) => {
    const username = uniqueUsername();
    return { username, email: `${username}@example.com`, password: "correct horse battery", ...overrides };
  };

  describe("registration", () => {
    it("registers an account: 201, Location, bronze, no password in sight", async () => {
      const input = newCustomer({ firstName: "Ada", lastName: "Lovelace", phone: "+44 20 7946 0000" });
      const response = await send("POST", "/customer", { ...input, id: 77, createdAt: "yesterday" });
      expect(response.status).toBe(201);
      const customer = await json(response);
      expect(customer).toEqual({
        id: expect.any(Number),
        username: input.username,
        firstName: "Ada",
        lastName: "Lovelace",
        email: input.email,
        phone: "+44 20 7946 0000",
        customerStatus: "bronze",
        createdAt: expect.any(String),
      });
      expect(customer.id).not.toBe(77);
      expect(Number.isSafeInteger(customer.id) && customer.id > 0).toBe(true);
      expect(Date.parse(customer.createdAt)).toBeGreaterThan(Date.now() - 60_000);
      expect(response.headers.get("location")).toBe(`${system.baseUrl}/customer/${input.username}`);
      const text = JSON.stringify(customer);
      expect(text).not.toContain(input.password);
      expect(text.toLowerCase()).not.toContain("password");
    });

    it("defaults phone to null and omits names not given", async () => {
      const customer = await json(await send("POST", "/customer", newCustomer()));
      expect(customer.phone).toBeNull();
      expect(customer).not.toHaveProperty("firstName");
    });

    it("refuses a taken username or email with 409, case-insensitively", async () => {
      const first = newCustomer();
      expect((await send("POST", "/customer", first)).status).toBe(201);
      const sameName = await send(
        "POST",
        "/customer",
        newCustomer({ username: first.username.toUpperCase() }),
      );
      expect(sameName.status).toBe(409);
      expect(await json(sameName)).toMatchObject({
        code: 409,
        type: "conflict",
        message: expect.stringMatching(/username/),
      });
      const sameEmail = await send("POST", "/customer", newCustomer({ email: first.email.toUpperCase() }));
      expect(sameEmail.status).toBe(409);
      expect((await json(sameEmail)).message).toMatch(/email/);
      // A refused registration holds nothing: its own username is still free.
      const loser = newCustomer({ email: first.email });
      expect((await send("POST", "/customer", loser)).status).toBe(409);
      expect((await send("POST", "/customer", { ...loser, email: `x${loser.email}` })).status).toBe(201);
    });

    it("lets exactly one of many concurrent registrations of one username win", async () => {
      const username = uniqueUsername("race");
      const attempts = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          send("POST", "/customer", newCustomer({ username: i % 2 ? username : username.toUpperCase() })),
        ),
      );
      const statuses = attempts.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    });

    it("answers invalid bodies with 422 naming each field", async () => {
      const response = await send("POST", "/customer", {
        username: "a b",
        email: "not-an-email",
        password: "short",
        phone: "call me",
      });
      expect(response.status).toBe(422);
      const body = await json(response);
      expect(body).toMatchObject({ code: 422, type: "validation_error" });
      expect(body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
        "email",
        "password",
        "phone",
        "username",
      ]);
      const unknown = await send("POST", "/customer", { ...newCustomer(), customerStatus: "platinum" });
      expect(unknown.status).toBe(422);
      expect((await json(unknown)).errors).toContainEqual({
        field: "customerStatus",
        message: "unknown field",
      });
      expect((await send("POST", "/customer", "{nope")).status).toBe(422);
      for (const username of ["ab", "x".repeat(33), "logout", "Login", "createMultiple"]) {
        const refused = await send("POST", "/customer", newCustomer({ username }));
        expect(refused.status, username).toBe(422);
      }
      expect((await send("POST", "/customer", newCustomer({ password: "p".repeat(129) }))).status).toBe(422);
      expect((await send("POST", "/customer", newCustomer({ password: "p".repeat(128) }))).status).toBe(201);
    });
  });

  describe("batch registration", () => {
    it("registers what it can and names each failure by index, in order", async () => {
      const a = newCustomer();
      const b = newCustomer();
      const taken = newCustomer();
      expect((await send("POST", "/customer", taken)).status).toBe(201);
      const response = await send("POST", "/customer/createMultiple", [
        a,
        { ...newCustomer(), email: "broken" },
        { ...newCustomer(), username: a.username.toUpperCase() },
        b,
        { ...newCustomer(), email: taken.email },
        "not an object",
      ]);
      expect(response.status).toBe(200);
      const body = await json(response);
      expect(body.created.map((c: { username: string }) => c.username)).toEqual([a.username, b.username]);
      expect(body.created[0]).toMatchObject({ customerStatus: "bronze", email: a.email });
      expect(body.errors.map((e: { index: number }) => e.index)).toEqual([1, 2, 4, 5]);
      for (const error of body.errors) expect(error.message).toEqual(expect.any(String));
      expect(body.errors[0].message).toMatch(/email/);
      expect(body.errors[1].message).toMatch(/username/);
      expect(body.errors[2].message).toMatch(/email/);
      const read = await send("GET", `/customer/${b.username}`, undefined, operator.apiKey);
      expect(read.status).toBe(200);
    });

    it("takes at most 100 elements and only an array", async () => {
      const tooMany = Array.from({ length: 101 }, () => newCustomer());
      const response = await send("POST", "/customer/createMultiple", tooMany);
      expect(response.status).toBe(422);
      expect(await json(response)).toMatchObject({ code: 422, type: "validation_error" });
      expect((await send("POST", "/customer/createMultiple", { username: "x" })).status).toBe(422);
    });

    it("registers a full batch of 100 within the RPC deadline; on a slow host, what it could not start is sent again", async () => {
      const batch = Array.from({ length: 100 }, () => newCustomer());
      const ids = new Set<number>();
      let left = batch;
      for (let round = 0; round < 5 && left.length > 0; round++) {
        const started = Date.now();
        const response = await send("POST", "/customer/createMultiple", left);
        expect(Date.now() - started).toBeLessThan(5_000 + 1_000); // RPC_TIMEOUT, and the trip
        expect(response.status).toBe(200);
        const body = await json(response);
        for (const customer of body.created) ids.add(customer.id);
        for (const error of body.errors) expect(error.message).toMatch(/ran out of time/);
        left = body.errors.map((e: { index: number }) => left[e.index]);
      }
      expect(left).toEqual([]);
      expect(ids.size).toBe(100);
    });
  });

  describe("reading, replacing and who may", () => {
    it("answers personal data with Cache-Control: no-store, whatever the credential", async () => {
      const alice = await registerAndLogin(system);
      const issued = await send("POST", `/customer/${alice.username}/apiKeys`, {}, alice.bearer);
      expect(issued.status).toBe(201);
      const ownKey = { "x-api-key": (await json(issued)).key as string };
      const reads: [string, Record<string, string>][] = [
        [`/customer/${alice.username}`, operator.apiKey],
        [`/customer/${alice.username}`, ownKey],
        [`/customer/${alice.username}`, alice.bearer],
        [`/customer/${alice.username}/history`, ownKey],
        [`/customer/${alice.username}/apiKeys`, alice.bearer],
        [`/customer/${alice.username}/grants`, alice.bearer],
        ["/store/orders", ownKey],
        ["/store/orders", alice.bearer],
      ];
      for (const [path, headers] of reads) {
        const response = await send("GET", path, undefined, headers);
        expect(response.status, path).toBe(200);
        expect(response.headers.get("cache-control"), `${path} ${Object.keys(headers)}`).toBe("no-store");
      }
      const registered = await send("POST", "/customer", newCustomer());
      expect(registered.status).toBe(201);
      expect(registered.headers.get("cache-control")).toBe("no-store");
    });

    it("lets a customer read itself, not others (403), and an operator key anyone", async () => {
      const alice = await registerAndLogin(system);
      const bob = await registerAndLogin(system);
      const self = await send("GET", `/customer/${alice.username}`, undefined, alice.bearer);
      expect(self.status).toBe(200);
      expect(await json(self)).toMatchObject({ id: alice.id, username: alice.username, email: alice.email });
      // Usernames are case-insensitive, so this is still alice.
      expect(
        (await send("GET", `/customer/${alice.username.toUpperCase()}`, undefined, alice.bearer)).status,
      ).toBe(200);
      const other = await send("GET", `/customer/${bob.username}`, undefined, alice.bearer);
      expect(other.status).toBe(403);
      expect(await json(other)).toMatchObject({ code: 403, type: "forbidden" });
      // Whether the other account exists or not, a customer learns nothing.
      expect((await send("GET", "/customer/nobody_here", undefined, alice.bearer)).status).toBe(403);
      expect((await send("GET", `/customer/${bob.username}`, undefined, operator.apiKey)).status).toBe(200);
      expect((await send("GET", "/customer/nobody_here", undefined, operator.apiKey)).status).toBe(404);
      const anonymous = await send("GET", `/customer/${alice.username}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get("www-authenticate")).toBeTruthy();
      expect((await send("GET", "/customer/a%20b", undefined, operator.apiKey)).status).toBe(400);
      // An operator OAuth client is neither api_key nor bearer_auth.
      expect((await send("GET", `/customer/${alice.username}`, undefined, operator.bearer)).status).toBe(403);
    });

    it("replaces one's own account; a new username and email free the old ones", async () => {
      const alice = await registerAndLogin(system);
      const renamed = newCustomer({ firstName: "Alice", password: "a new long password" });
      const response = await send(
        "PUT",
        `/customer/${alice.username}`,
        { ...renamed, currentPassword: alice.password },
        alice.bearer,
      );
      expect(response.status).toBe(200);
      expect(await json(response)).toMatchObject({
        id: alice.id,
        username: renamed.username,
        email: renamed.email,
        firstName: "Alice",
        phone: null,
      });
      // The same session still works under the new name; the old name is free again.
      expect((await send("GET", `/customer/${renamed.username}`, undefined, alice.bearer)).status).toBe(200);
      expect((await send("GET", `/customer/${alice.username}`, undefined, operator.apiKey)).status).toBe(404);
      expect(
        (await send("POST", "/customer", newCustomer({ username: alice.username, email: alice.email })))
          .status,
      ).toBe(201);
      const login = (password: string) =>
        send("POST", "/customer/login", { username: renamed.username, password });
      expect((await login(alice.password)).status).toBe(401);
      expect((await login("a new long password")).status).toBe(200);
    });

    it("refuses to replace someone else (403), to take a taken name (409), and bad bodies (422)", async () => {
      const alice = await registerAndLogin(system);
      const bob = await registerAndLogin(system);
      expect(
        (
          await send(
            "PUT",
            `/customer/${bob.username}`,
            newCustomer({ currentPassword: alice.password }),
            alice.bearer,
          )
        ).status,
      ).toBe(403);
      const stealing = await send(
        "PUT",
        `/customer/${alice.username}`,
        newCustomer({ username: bob.username, currentPassword: alice.password }),
        alice.bearer,
      );
      expect(stealing.status).toBe(409);
      const stealingEmail = await send(
        "PUT",
        `/customer/${alice.username}`,
        newCustomer({ email: bob.email.toUpperCase(), currentPassword: alice.password }),
        alice.bearer,
      );
      expect(stealingEmail.status).toBe(409);
      // Nothing changed, and the name alice tried to move to is still free.
      expect(
        await json(await send("GET", `/customer/${alice.username}`, undefined, alice.bearer)),
      ).toMatchObject({
        email: alice.email,
      });
      const invalid = await send(
        "PUT",
        `/customer/${alice.username}`,
        { username: alice.username },
        alice.bearer,
      );
      expect(invalid.status).toBe(422);
      expect((await json(invalid)).errors.map((e: { field: string }) => e.field).sort()).toEqual([
        "currentPassword",
        "email",
        "password",
      ]);
      // A PUT without currentPassword is 422 whether or not its password is the current one, so
      // it does not tell which (security probe L7).
      for (const password of [alice.password, "a guess at alice's password"]) {
        const guess = await send(
          "PUT",
          `/customer/${alice.username}`,
          { username: alice.username, email: alice.email, password },
          alice.bearer,
        );
        expect(guess.status).toBe(422);
        expect((await json(guess)).errors).toEqual([
          { field: "currentPassword", message: expect.any(String) },
        ]);
      }
      expect((await send("PUT", `/customer/${alice.username}`, newCustomer(), operator.apiKey)).status).toBe(
        403,
      );
    });
  });

  describe("favourite cheese", () => {
    it("returns {id} as the catalogue's cheese and {name} as given; an unknown id is 422", async () => {
      const created = await send(
        "POST",
        "/cheeses",
        { name: `Fav ${randomUUID().slice(0, 6)}` },
        operator.bearer,
      );
      expect(created.status).toBe(201);
      const cheese = await json(created);
      const byId = await json(
        await send("POST", "/customer", newCustomer({ favouriteCheese: { id: cheese.id } })),
      );
      expect(byId.favouriteCheese).toEqual(cheese);
      const byName = await json(
        await send("POST", "/customer", newCustomer({ favouriteCheese: { name: "Stilton" } })),
      );
      expect(byName.favouriteCheese).toEqual({ name: "Stilton" });
      const unknown = await send("POST", "/customer", newCustomer({ favouriteCheese: { id: 987654321 } }));
      expect(unknown.status).toBe(422);
      expect((await json(unknown)).errors).toEqual([
        { field: "favouriteCheese.id", message: expect.any(String) },
      ]);
      const both = await send(
        "POST",
        "/customer",
        newCustomer({ favouriteCheese: { id: cheese.id, name: "x" } }),
      );
      expect(both.status).toBe(422);
    });
  });

  it("documents every customer and API-key operation with its schemas and security", async () => {
    const doc = await json(await fetch(`${system.baseUrl}/openapi.json`));
    const operations: [string, string, unknown[]][] = [
      ["/customer", "post", []],
      ["/customer/createMultiple", "post", []],
      ["/customer/login", "post", []],
      ["/customer/logout", "get", [{ bearer_auth: [] }]],
      ["/customer/{username}", "get", [{ api_key: [] }, { bearer_auth: [] }]],
      ["/customer/{username}", "put", [{ bearer_auth: [] }]],
      ["/customer/{username}", "delete", [{ bearer_auth: [] }]],
      ["/customer/{username}/apiKeys", "post", [{ bearer_auth: [] }]],
      ["/customer/{username}/apiKeys", "get", [{ bearer_auth: [] }]],
      ["/customer/{username}/apiKeys/{id}", "delete", [{ bearer_auth: [] }]],
      ["/customer/{username}/grants", "get", [{ bearer_auth: [] }]],
      ["/customer/{username}/grants/{id}", "delete", [{ bearer_auth: [] }]],
    ];
    for (const [path, method, security] of operations) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(operation.security, `${method} ${path}`).toEqual(security);
      const success = Object.keys(operation.responses).find((status) => status.startsWith("2"));
      expect(success, `${method} ${path}`).toBeDefined();
    }
    const schema = (ref: { $ref: string }) => doc.components.schemas[ref.$ref.split("/").pop()!];
    const register = doc.paths["/customer"].post;
    expect(schema(register.requestBody.content["application/json"].schema).required).toEqual([
      "username",
      "email",
      "password",
    ]);
    expect(
      schema(register.responses["201"].content["application/json"].schema).properties,
    ).not.toHaveProperty("password");
    // Changing the password or email takes the current one; registering does not.
    const replace = doc.paths["/customer/{username}"].put;
    const replaceBody = schema(replace.requestBody.content["application/json"].schema);
    expect(replaceBody.properties.currentPassword).toMatchObject({ type: "string", format: "password" });
    expect(replaceBody.required).toContain("currentPassword");
    expect(schema(register.requestBody.content["application/json"].schema).properties).not.toHaveProperty(
      "currentPassword",
    );
    expect(doc.paths["/customer/login"].post.responses["200"].headers).toHaveProperty("X-Expires-After");
    expect(doc.components.schemas.IssuedApiKey.required).toEqual(
      expect.arrayContaining(["id", "key", "prefix", "plan", "createdAt", "expiresAt"]),
    );
  });

  describe("tiers and events", () => {
    const deliver = (customerId: number, orderId: number, total: number) =>
      bus.publish({
        id: randomUUID(),
        subject: "events.ordering.order.delivered",
        payload: {
          customerId,
          order: {
            id: orderId,
            items: [{ cheeseId: 1, cheeseName: "Brie", quantity: 1, pricePerKg: total }],
            shippingAddress: { street: "1 Way", city: "Bath", country: "GB" },
            status: "delivered",
            notes: null,
            total,
            shipDate: null,
            createdAt: new Date().toISOString(),
            updatedAt: new Date().toISOString(),
          },
        },
      });

    it("moves customerStatus with delivered totals, counting each order once", async () => {
      const alice = await registerAndLogin(system);
      const status = async () =>
        (await json(await send("GET", `/customer/${alice.username}`, undefined, alice.bearer)))
          .customerStatus;
      const base = 900_000_000 + Math.floor(Math.random() * 1_000_000);
      await deliver(alice.id, base, 99.5);
      await deliver(alice.id, base, 99.5); // redelivered: counted once
      await deliver(alice.id, base + 1, 0.5);
      await expect.poll(status).toBe("silver");
      await deliver(alice.id, base + 2, 400);
      await expect.poll(status).toBe("gold");
      const changes = () =>
        published
          .filter((e) => e.subject === "events.customer.customer.status_changed")
          .map((e) => e.payload as { customerId: number; from: string; to: string })
          .filter((p) => p.customerId === alice.id);
      await expect.poll(changes).toEqual([
        { customerId: alice.id, username: alice.username, from: "bronze", to: "silver" },
        { customerId: alice.id, username: alice.username, from: "silver", to: "gold" },
      ]);
      // Gold customers are on the pro plan.
      const login = await send("POST", "/customer/login", {
        username: alice.username,
        password: alice.password,
      });
      expect(login.headers.get("x-rate-limit")).toBe("10000");
    });

    it("publishes customer.created for each registration (batch elements too) and customer.updated", async () => {
      const single = newCustomer();
      const batch = [newCustomer(), newCustomer()];
      const one = await json(await send("POST", "/customer", single));
      const many = await json(await send("POST", "/customer/createMultiple", batch));
      const alice = await registerAndLogin(system);
      expect(
        (
          await send(
            "PUT",
            `/customer/${alice.username}`,
            newCustomer({ currentPassword: alice.password }),
            alice.bearer,
          )
        ).status,
      ).toBe(200);
      const created = () =>
        published.filter((e) => e.subject === "events.customer.customer.created").map((e) => e.payload);
      const expected = [one, ...many.created].map((customer: { id: number; username: string }) => ({
        customerId: customer.id,
        username: customer.username,
      }));
      await expect.poll(created).toEqual(expect.arrayContaining(expected));
      await expect
        .poll(() =>
          published.filter((e) => e.subject === "events.customer.customer.updated").map((e) => e.payload),
        )
        .toContainEqual(expect.objectContaining({ customerId: alice.id }));
      // Integration events never carry personal data.
      for (const event of published) expect(JSON.stringify(event.payload)).not.toContain("@example.com");
    });
  });
});
