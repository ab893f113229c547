import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { cheeseChangeNotices, customerRpc, REVOCATIONS_BUCKET, revocationCodec } from "@cheese/contracts";
import { callRpc, KvRecords } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { connect, Events, type NatsConnection, type NatsError, headers as natsHeaders } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { busAs, natsAs } from "./support/nats-identity.ts";
import { launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * NATS lets in only the services' identities (docs/security.md, M2), each allowed what its
 * service does: a local process without one cannot reach the internal RPCs, and a service cannot
 * ask what only the gateway asks. The nats-server `pnpm start` runs, and the image's stack (NATS
 * in a container given the same authorization, as compose and the overlays give it).
 */
describe("NATS authorization", () => {
  let system: RunningSystem;
  let customer: TestCustomer;

  beforeAll(async () => {
    system = await startSystem();
    customer = await registerAndLogin(system);
  });
  afterAll(async () => {
    await system?.stop();
  });

  /** customer.customer.get for the registered customer, asked as the service `identity`. */
  async function getCustomerAs(identity: string) {
    const bus = await busAs(system, identity, createLogger("e2e-nats-auth", "silent"));
    try {
      return await callRpc(
        bus,
        customerRpc.get,
        { username: customer.username, asCustomer: null },
        { timeoutMs: 2_000 },
      );
    } finally {
      await bus.close();
    }
  }

  it("refuses a connection without credentials", async () => {
    const refused = await connect({ servers: system.natsUrl(), reconnect: false }).then(
      async (nc) => {
        await nc.close();
        return "connected";
      },
      (error: { code?: string }) => error.code,
    );
    expect(refused).toBe("AUTHORIZATION_VIOLATION");
  });

  it("answers the gateway's customer.customer.get, and not the catalogue's", async () => {
    const asGateway = await getCustomerAs("gateway");
    expect(asGateway.customer).toMatchObject({ id: customer.id, username: customer.username });
    // The server refuses the catalogue's publish: nobody hears the request, no answer comes.
    await expect(getCustomerAs("catalogue")).rejects.toThrow();
  });

  it("lets the gateway watch the revocations the customer service writes, and not write them", async () => {
    const bus = await busAs(system, "gateway", createLogger("e2e-nats-auth", "silent"));
    try {
      const revocations = new KvRecords(bus, REVOCATIONS_BUCKET, revocationCodec, { readOnly: true });
      const seen: string[] = [];
      const watching = await revocations.watch(">", (change) => seen.push(change.key));
      // A logout: the customer service writes the token's revocation.
      const session = await registerAndLogin(system);
      const loggedOut = await fetch(`${system.baseUrl}/customer/logout`, { headers: session.bearer });
      expect(loggedOut.status).toBe(204);
      await expect.poll(() => seen.some((key) => key.startsWith("jti."))).toBe(true);
      await watching.close();
      await expect(revocations.put("jti.forged", { until: Date.now() + 60_000 })).rejects.toThrow();
      expect(await revocations.get("jti.forged")).toBeUndefined();
    } finally {
      await bus.close();
    }
  });

  it("lets the gateway only say what it applied of the catalogue's notices, and the catalogue only hear it", async () => {
    const applied = `notices.${cheeseChangeNotices.channel}.applied`;
    const connected: NatsConnection[] = [];
    const as = async (identity: string) => {
      const nc = await natsAs(system, identity, { reconnect: false });
      connected.push(nc);
      return nc;
    };
    try {
      const catalogue = await as("catalogue");
      const gateway = await as("gateway");
      const catalogueErrors: unknown[] = [];
      void (async () => {
        for await (const status of catalogue.status())
          if (status.type === Events.Error) catalogueErrors.push(status.permissionContext);
      })();
      const heard: string[] = [];
      catalogue.subscribe(applied, { callback: (error, msg) => error || heard.push(msg.string()) });
      await catalogue.flush();

      // The catalogue's own "applied" is refused: had the server taken it, the catalogue's
      // subscription would have it before the flush's answer.
      catalogue.publish(applied, "forged by the catalogue");
      await catalogue.flush();
      expect(heard).not.toContain("forged by the catalogue");
      await expect.poll(() => catalogueErrors).toContainEqual({ operation: "publish", subject: applied });

      // The gateway's is heard (the running gateway's own acks come in between).
      gateway.publish(applied, "from the gateway");
      await expect.poll(() => heard).toContain("from the gateway");
      expect(heard).not.toContain("forged by the catalogue");

      // The gateway may not listen to what other lease holders applied.
      const refused = await new Promise<NatsError | null>((resolve) => {
        gateway.subscribe(applied, { callback: (error) => resolve(error) });
        gateway.publish(applied, "to the gateway itself");
      });
      expect(refused?.permissionContext).toEqual({ operation: "subscription", subject: applied });
    } finally {
      await Promise.all(connected.map((nc) => nc.close()));
    }
  });

  it("lets only the catalogue append a notice, and only the gateway a read-lease record", async () => {
    const { channel } = cheeseChangeNotices;
    const stream = `NOTICES_${channel}`;
    const [notices, leases] = [`notices.${channel}`, `notices.${channel}.lease`];
    const connected: NatsConnection[] = [];
    const as = async (identity: string) => {
      const nc = await natsAs(system, identity, { reconnect: false });
      connected.push(nc);
      const refused: unknown[] = [];
      void (async () => {
        for await (const status of nc.status())
          if (status.type === Events.Error) refused.push(status.permissionContext);
      })();
      return { nc, js: nc.jetstream(), refused };
    };
    /** The header of a lease record (a release: no lease holder waits on it). */
    const release = (holder: string) => {
      const h = natsHeaders();
      h.set("Notice-Lease", `${holder} released`);
      return h;
    };
    try {
      const catalogue = await as("catalogue");
      const gateway = await as("gateway");
      const jsm = await catalogue.nc.jetstreamManager();
      const last = (subject: string) =>
        jsm.streams.getMessage(stream, { last_by_subj: subject }).then(
          (m) => ({ seq: m.seq, data: m.string(), lease: m.header?.get("Notice-Lease") ?? "" }),
          () => undefined,
        );

      // Each appends its own: stored, in the stream's one order.
      const notice = await catalogue.js.publish(notices, JSON.stringify({ all: true }));
      const record = await gateway.js.publish(leases, new Uint8Array(), { headers: release("e2e-gateway") });
      expect(record.seq).toBeGreaterThan(notice.seq);

      // A notice forged by a gateway, a lease record forged by the catalogue: refused by the server.
      gateway.nc.publish(notices, JSON.stringify({ forged: "by the gateway" }));
      catalogue.nc.publish(leases, new Uint8Array(), { headers: release("forged-by-the-catalogue") });
      await Promise.all([gateway.nc.flush(), catalogue.nc.flush()]);
      await expect.poll(() => gateway.refused).toContainEqual({ operation: "publish", subject: notices });
      await expect.poll(() => catalogue.refused).toContainEqual({ operation: "publish", subject: leases });
      expect((await last(notices))?.data).not.toContain("forged");
      // The running gateway's renewals come in between: whatever is last, it is not the forgery.
      expect((await last(leases))?.lease).not.toContain("forged");
      await expect(
        gateway.js.publish(notices, JSON.stringify({ forged: "by the gateway" }), { timeout: 1_000 }),
      ).rejects.toThrow();
    } finally {
      await Promise.all(connected.map((nc) => nc.close()));
    }
  });

  /**
   * As `identity`: `stream` is read, its purge and deletion (and, with `firstMessage`, the removal
   * of its first message) are refused by the server, and it is as it was.
   */
  async function expectKeptFrom(identity: string, stream: string, { firstMessage = false } = {}) {
    const nc = await natsAs(system, identity, { reconnect: false });
    try {
      const jsm = await nc.jetstreamManager();
      const before = await jsm.streams.info(stream);
      const refused = { code: "PERMISSIONS_VIOLATION" };
      await expect(jsm.streams.purge(stream)).rejects.toMatchObject(refused);
      await expect(jsm.streams.delete(stream)).rejects.toMatchObject(refused);
      if (firstMessage) {
        expect(before.state.messages).toBeGreaterThan(0); // the registration's events at least
        await expect(jsm.streams.deleteMessage(stream, before.state.first_seq)).rejects.toMatchObject(
          refused,
        );
        const first = await jsm.streams.getMessage(stream, { seq: before.state.first_seq });
        expect(first.seq).toBe(before.state.first_seq);
      }
      const after = await jsm.streams.info(stream);
      expect(after.created).toBe(before.created);
      expect(after.state.first_seq).toBe(before.state.first_seq);
    } finally {
      await nc.close();
    }
  }

  it.each(["gateway", "catalogue"])(
    "lets the %s read the notice channel's stream, and not purge or delete it",
    (identity) => expectKeptFrom(identity, `NOTICES_${cheeseChangeNotices.channel}`),
  );

  it.each(["gateway", "catalogue", "ordering", "customer", "notification"])(
    "lets the %s read EVENTS, and not purge or delete it nor remove an event",
    (identity) => expectKeptFrom(identity, "EVENTS", { firstMessage: true }),
  );

  // The gateway may remove one of its bucket's values (an erasure), not the bucket.
  it("lets the gateway use its rate-limit bucket, and not purge or delete it", () =>
    expectKeptFrom("gateway", "KV_rate_limits"));

  it.skipIf(launcherOnly("the identities the launcher keeps in DATA_DIR"))(
    "keeps each identity's seed in a file only its owner may read, and never prints one",
    () => {
      const dir = system.natsCredentials() as string;
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      const files = readdirSync(dir).sort();
      expect(files).toEqual(
        ["catalogue", "customer", "gateway", "monitor", "notification", "ordering"].map((id) => `${id}.nk`),
      );
      for (const file of files) {
        expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);
        const seed = readFileSync(join(dir, file), "utf8").trim();
        expect(seed).toMatch(/^SU[A-Z2-7]{56}$/);
        expect(system.output()).not.toContain(seed);
      }
    },
  );
});
