import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { apiKeyHash, type CustomerFields } from "@cheese/contracts";
import { createInProcessBroker } from "@cheese/messaging";
import { createLogger, type RunningService, startService } from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticateApiKey, createApiKey, revokeApiKey } from "../src/handlers/api-keys.ts";
import { deleteCustomer } from "../src/handlers/delete-customer.ts";
import type { CustomerDeps } from "../src/handlers/deps.ts";
import { exportCustomer } from "../src/handlers/history.ts";
import { getCustomer, login } from "../src/handlers/queries.ts";
import {
  BATCH_REPLY_MARGIN_MS,
  NOT_REACHED,
  registerBatch,
  registerCustomer,
} from "../src/handlers/register-customer.ts";
import { replaceCustomer } from "../src/handlers/replace-customer.ts";
import { customerService } from "../src/main.ts";
import type { PersonalDataVault } from "../src/personal-data/vault.ts";

const context = { requestId: "test", correlationId: "test" };
let root: string;
/** The service's own folder under DATA_DIR: its event store and personal-data keys. */
let dir: string;
let service: RunningService<CustomerDeps>;
let deps: CustomerDeps;
let counter = 0;
const clock = new ManualClock();

const fields = (overrides: Partial<CustomerFields> = {}): CustomerFields => {
  counter += 1;
  return {
    username: `user${counter}`,
    email: `user${counter}@example.com`,
    password: "correct horse battery",
    phone: null,
    ...overrides,
  };
};

/** The service as `main.ts` wires it, over a temporary DATA_DIR; its handlers called directly. */
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "customer-accounts-"));
  dir = join(root, "customer");
  service = await startService(customerService, {
    env: { DATA_DIR: root, LOG_LEVEL: "silent" },
    bus: createInProcessBroker().connect("customer"),
    logger: createLogger("customer", "silent"),
    clock,
  });
  // No catalogue here: a favourite cheese is never found.
  deps = { ...service.wired, cheeses: async () => undefined };
});
afterAll(async () => {
  await service.stop();
  rmSync(root, { recursive: true, force: true });
});

describe("registration on the write side", () => {
  it("lets exactly one of concurrent registrations of a username (any case) win", async () => {
    const name = "racer";
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        registerCustomer(deps, fields({ username: i % 2 ? name : name.toUpperCase() }), context),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((r) => r.status === "rejected")) {
      expect((r as PromiseRejectedResult).reason).toMatchObject({ body: { status: 409 } });
    }
  });

  it("refuses an email in another case, and frees the username the loser reserved", async () => {
    const first = fields();
    await registerCustomer(deps, first, context);
    const loser = fields({ email: first.email.toUpperCase() });
    await expect(registerCustomer(deps, loser, context)).rejects.toMatchObject({
      body: { status: 409, message: "username or email exists" },
    });
    await expect(
      registerCustomer(deps, { ...loser, email: "other@example.com" }, context),
    ).resolves.toMatchObject({
      username: loser.username,
    });
  });

  it("registers a batch in order: invalid elements and a later duplicate fail with their own index", async () => {
    const a = fields();
    const result = await registerBatch(
      deps,
      [a, { username: "x" }, "not a customer", { ...fields(), username: a.username }],
      context,
    );
    expect(result.created).toEqual([expect.objectContaining({ username: a.username })]);
    expect(result.errors.map((e) => e.index)).toEqual([1, 2, 3]);
    expect(result.errors[0]!.message).toContain("email");
    expect(result.errors[2]).toEqual({ index: 3, message: "username or email exists" });
  });

  it("answers a batch before its caller's deadline: what it could not start is an error at its index, to send again", async () => {
    const batch = Array.from({ length: 100 }, () => fields());
    const started = Date.now();
    const deadline = started + BATCH_REPLY_MARGIN_MS + 200;
    const first = await registerBatch(deps, batch, { ...context, deadline });
    expect(Date.now()).toBeLessThan(deadline);
    const notReached = first.errors.filter((e) => e.message === NOT_REACHED).map((e) => e.index);
    expect(notReached.length).toBeGreaterThan(0);
    expect(first.created.length + notReached.length).toBe(100);
    expect(first.errors).toHaveLength(notReached.length);
    // Nothing of them was written: sent again, with time enough, they are registered.
    const again = await registerBatch(
      deps,
      notReached.map((index) => batch[index]),
      context,
    );
    expect(again.errors).toEqual([]);
    expect(again.created.map((c) => c.username)).toEqual(notReached.map((index) => batch[index]!.username));
  });

  it("answers a taken email exactly as a taken username, alone and in a batch, so no answer tells whether an email is registered", async () => {
    const holder = fields();
    await registerCustomer(deps, holder, context);
    const refusal = (attempt: ReturnType<typeof fields>) =>
      registerCustomer(deps, attempt, context).then(
        () => "registered",
        (error: { body: unknown }) => error.body,
      );
    const takenEmail = await refusal(fields({ email: holder.email }));
    const takenUsername = await refusal(fields({ username: holder.username }));
    expect(takenEmail).toEqual(takenUsername);
    expect(JSON.stringify(takenEmail)).not.toMatch(/email already|username already/);
    const batch = await registerBatch(
      deps,
      [fields({ email: holder.email }), fields({ username: holder.username })],
      context,
    );
    expect(batch.created).toEqual([]);
    expect(batch.errors.map((e) => e.message)).toEqual([
      "username or email exists",
      "username or email exists",
    ]);
  });
});

describe("login", () => {
  it("answers the customer for the right password and the same 401 otherwise", async () => {
    const alice = fields();
    const { id } = await registerCustomer(deps, alice, context);
    await expect(
      login(deps, { username: alice.username.toUpperCase(), password: alice.password }),
    ).resolves.toEqual({
      customerId: id,
      username: alice.username,
      customerStatus: "bronze",
      plan: "free",
      passwordVersion: 0,
    });
    const wrong = await login(deps, { username: alice.username, password: "nope" }).catch((e) => e);
    const unknown = await login(deps, { username: "ghost", password: "nope" }).catch((e) => e);
    expect(wrong.body).toEqual({
      status: 401,
      type: "unauthorized",
      message: "invalid username or password",
    });
    expect(unknown.body).toEqual(wrong.body);
  });
});

describe("changing the password or the email", () => {
  it("needs the current password, and changes nothing without it (422) or with a wrong one (403)", async () => {
    const frank = fields();
    const { id } = await registerCustomer(deps, frank, context);
    const keyBefore = await createApiKey(deps, { username: frank.username, asCustomer: id }, context);
    const request = { username: frank.username, asCustomer: id, session: "s1" };
    const newPassword = { ...frank, password: "a brand new password" };
    const newEmail = { ...frank, email: "frank.new@example.com" };
    for (const changed of [newPassword, newEmail]) {
      await expect(replaceCustomer(deps, { ...request, fields: changed }, context)).rejects.toMatchObject({
        body: { status: 422, errors: [{ field: "currentPassword" }] },
      });
      await expect(
        replaceCustomer(deps, { ...request, fields: changed, currentPassword: "not it at all" }, context),
      ).rejects.toMatchObject({ body: { status: 403, message: expect.stringContaining("currentPassword") } });
    }
    // Nothing changed: the old password and email stand, and the key works.
    await expect(login(deps, { username: frank.username, password: frank.password })).resolves.toMatchObject({
      passwordVersion: 0,
    });
    await expect(
      getCustomer(deps, { username: frank.username, asCustomer: id }, context),
    ).resolves.toMatchObject({ email: frank.email });
    await expect(authenticateApiKey(deps, apiKeyHash(keyBefore.key))).resolves.toMatchObject({
      customerId: id,
    });

    // Nothing changes without it either: else the answer would tell whether `password` is the
    // current one (security probe L7).
    for (const password of [frank.password, "a guess at the password"]) {
      await expect(
        replaceCustomer(deps, { ...request, fields: { ...frank, password, firstName: "Franz" } }, context),
      ).rejects.toMatchObject({ body: { status: 422, errors: [{ field: "currentPassword" }] } });
    }
    // With it, names change; the same password given again is no change of password.
    const renamed = await replaceCustomer(
      deps,
      { ...request, fields: { ...frank, firstName: "Franz" }, currentPassword: frank.password },
      context,
    );
    expect(renamed).toMatchObject({ customer: { firstName: "Franz" }, passwordVersion: null });

    // With it: the new password works, the old one and the keys made before do not.
    const changed = await replaceCustomer(
      deps,
      { ...request, fields: { ...newPassword, email: newEmail.email }, currentPassword: frank.password },
      context,
    );
    expect(changed).toMatchObject({ customer: { email: newEmail.email }, passwordVersion: 1 });
    await expect(login(deps, { username: frank.username, password: frank.password })).rejects.toMatchObject({
      body: { status: 401 },
    });
    await expect(
      login(deps, { username: frank.username, password: newPassword.password }),
    ).resolves.toMatchObject({ passwordVersion: 1 });
    await expect(authenticateApiKey(deps, apiKeyHash(keyBefore.key))).rejects.toMatchObject({
      body: { status: 401 },
    });
    const events = await deps.store.readStream(`customer-${id}`);
    expect(events.at(-1)).toMatchObject({
      type: "CustomerPasswordChanged",
      data: { passwordVersion: 1, keptSession: "s1", apiKeyIds: [keyBefore.id] },
    });
  });
});

describe("a change racing the customer's deletion", () => {
  it("answers 404 whether the deletion's key destruction comes before the change reads the data or after, and appends nothing", async () => {
    for (const deletedWhen of ["before the read", "between the read and the write"] as const) {
      const gina = fields();
      const { id } = await registerCustomer(deps, gina, context);
      const request = {
        username: gina.username,
        asCustomer: id,
        fields: { ...gina, firstName: "Gina" },
        currentPassword: gina.password,
      };
      // The deletion runs after the change found the customer active.
      const vault = Object.create(deps.vault) as PersonalDataVault;
      vault.open = async (customerId, sealed) => {
        if (deletedWhen === "before the read") await deleteCustomer(deps, request, context);
        const opened = await deps.vault.open(customerId, sealed);
        if (deletedWhen === "between the read and the write") await deleteCustomer(deps, request, context);
        return opened;
      };
      await expect(replaceCustomer({ ...deps, vault }, request, context), deletedWhen).rejects.toMatchObject({
        body: { status: 404 },
      });
      const events = await deps.store.readStream(`customer-${id}`);
      expect(events.map((event) => event.type)).toEqual(["CustomerRegistered", "CustomerDeleted"]);
    }
  });
});

describe("erasure", () => {
  it("needs the account's password again: a wrong one is 403 and erases nothing", async () => {
    const ida = fields();
    const { id } = await registerCustomer(deps, ida, context);
    const request = { username: ida.username, asCustomer: id };
    await expect(
      deleteCustomer(deps, { ...request, currentPassword: "not the password" }, context),
    ).rejects.toMatchObject({ body: { status: 403, message: expect.stringContaining("currentPassword") } });
    expect((await deps.store.readStream(`customer-${id}`)).map((e) => e.type)).toEqual([
      "CustomerRegistered",
    ]);
    await deleteCustomer(deps, { ...request, currentPassword: ida.password }, context);
    expect((await deps.store.readStream(`customer-${id}`)).map((e) => e.type)).toContain("CustomerDeleted");
  });

  it("destroys the key, so the sealed personal data in the event store cannot be read back", async () => {
    const bob = fields({ firstName: "Bobbington", lastName: "Smythe-Erased", phone: "+1 555 0100" });
    const { id } = await registerCustomer(deps, bob, context);
    expect(existsSync(join(dir, "keys", `customer-${id}.key`))).toBe(true);
    await deleteCustomer(
      deps,
      { username: bob.username, asCustomer: id, currentPassword: bob.password },
      context,
    );
    expect(existsSync(join(dir, "keys", `customer-${id}.key`))).toBe(false);

    const events = await deps.store.readStream(`customer-${id}`);
    const registered = events.find((e) => e.type === "CustomerRegistered")!.data as { personal: string };
    await expect(deps.vault.open(id, registered.personal)).resolves.toBeUndefined();
    const raw = Buffer.concat(
      [join(dir, "events.sqlite"), join(dir, "events.sqlite-wal")]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f)),
    );
    for (const secret of [bob.email, "Bobbington", "Smythe-Erased", "+1 555 0100"]) {
      expect(raw.includes(secret), secret).toBe(false);
    }
    await expect(
      getCustomer(deps, { username: bob.username, asCustomer: null }, context),
    ).rejects.toMatchObject({
      body: { status: 404 },
    });
    // The name and the email are free again.
    const again = await registerCustomer(deps, { ...bob, username: bob.username.toUpperCase() }, context);
    expect(again.id).not.toBe(id);
  });

  it("refuses a sealed blob moved to another customer", async () => {
    const { id: a } = await registerCustomer(deps, fields(), context);
    const { id: b } = await registerCustomer(deps, fields(), context);
    const sealed = await deps.vault.seal(a, { email: "a@example.com", phone: null, passwordHash: "x" });
    await expect(deps.vault.open(a, sealed)).resolves.toMatchObject({ email: "a@example.com" });
    await expect(deps.vault.open(b, sealed)).rejects.toThrow();
  });
});

describe("API keys", () => {
  it("finds a key's customer by apiKeyHash of the key as presented (what the gateway asks with), and refuses it once revoked or expired", async () => {
    const carol = fields();
    const { id } = await registerCustomer(deps, carol, context);
    const issued = await createApiKey(deps, { username: carol.username, asCustomer: id }, context);
    await expect(authenticateApiKey(deps, apiKeyHash(issued.key))).resolves.toMatchObject({
      customerId: id,
      username: carol.username,
      keyId: issued.id,
      plan: "free",
    });
    await revokeApiKey(deps, { username: carol.username, asCustomer: id, keyId: issued.id }, context);
    await expect(authenticateApiKey(deps, apiKeyHash(issued.key))).rejects.toMatchObject({
      body: { status: 401 },
    });

    const shortLived = { ...deps, apiKeyLifetimeMs: 50 };
    const brief = await createApiKey(shortLived, { username: carol.username, asCustomer: id }, context);
    await expect(authenticateApiKey(deps, apiKeyHash(brief.key))).resolves.toMatchObject({ keyId: brief.id });
    await clock.advance(50);
    await expect(authenticateApiKey(deps, apiKeyHash(brief.key))).rejects.toMatchObject({
      body: { status: 401, message: "API key expired" },
    });
  });

  it("lets only the key's customer manage its keys", async () => {
    const { id: dave } = await registerCustomer(deps, fields(), context);
    const erin = fields();
    await registerCustomer(deps, erin, context);
    await expect(
      createApiKey(deps, { username: erin.username, asCustomer: dave }, context),
    ).rejects.toMatchObject({
      body: { status: 403 },
    });
  });
});

describe("the account's part of a data export", () => {
  it("holds the account, every key issued (revoked ones marked, never a key or hash) and the whole history; 403 to another customer, 404 once erased", async () => {
    const fay = fields({ firstName: "Fay", phone: "+44 20 7946 0001" });
    const { id } = await registerCustomer(deps, fay, context);
    const own = { username: fay.username, asCustomer: id };
    const kept = await createApiKey(deps, own, context);
    const revoked = await createApiKey(deps, own, context);
    await revokeApiKey(deps, { ...own, keyId: revoked.id }, context);

    const exported = await exportCustomer(deps, own, context);
    expect(exported.customer).toMatchObject({
      id,
      username: fay.username,
      firstName: "Fay",
      email: fay.email,
    });
    expect(exported.apiKeys).toEqual([
      expect.objectContaining({
        id: kept.id,
        prefix: kept.prefix,
        expiresAt: kept.expiresAt,
        revoked: false,
      }),
      expect.objectContaining({ id: revoked.id, prefix: revoked.prefix, revoked: true }),
    ]);
    const text = JSON.stringify(exported);
    for (const secret of [kept.key, revoked.key, apiKeyHash(kept.key), apiKeyHash(revoked.key)]) {
      expect(text).not.toContain(secret);
    }
    expect(exported.history.map((entry) => entry.type)).toEqual([
      "customer.registered",
      "api_key.issued",
      "api_key.issued",
      "api_key.revoked",
    ]);
    expect(exported.history[0]).toMatchObject({ data: { email: fay.email, phone: "+44 20 7946 0001" } });
    // An operator exports anyone's.
    expect((await exportCustomer(deps, { ...own, asCustomer: null }, context)).customer.id).toBe(id);

    const { id: other } = await registerCustomer(deps, fields(), context);
    await expect(exportCustomer(deps, { ...own, asCustomer: other }, context)).rejects.toMatchObject({
      body: { status: 403 },
    });
    await deleteCustomer(deps, { ...own, currentPassword: fay.password }, context);
    await expect(exportCustomer(deps, { ...own, asCustomer: null }, context)).rejects.toMatchObject({
      body: { status: 404 },
    });
  });
});
