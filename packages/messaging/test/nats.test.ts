import { type ChildProcess, spawn } from "node:child_process";
import { Socket } from "node:net";
import {
  acceptsConnections,
  freePort,
  type NatsClusterHandle,
  type NatsServerHandle,
  startNatsCluster,
  startNatsServer,
  tempDir,
} from "@cheese/testing";
import { AckPolicy, connect, type JetStreamManager, nanos, headers as natsHeaders } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BusLogger,
  BusUnavailableError,
  connectNatsBus,
  type MessageBus,
  silentLogger,
} from "../src/index.ts";
import { takesSubjectLists } from "../src/nats/consumer.ts";
import { LEASE_COUNTED_BY_ANNOUNCER_MS, LEASE_HEADER } from "../src/read-leases.ts";
import { messageBusContract } from "./contract.ts";

let server: NatsServerHandle;

beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

messageBusContract("nats", async () => ({
  connect: (name) => connectNatsBus({ url: server.url, name, logger: silentLogger }),
  cleanup: async () => {},
}));

describe("NATS adapter specifics", () => {
  it("creates the EVENTS stream on events.> with a duplicate window of 2 minutes, and updates it", async () => {
    const bus = await connectNatsBus({ url: server.url, name: "cfg" });
    const nc = await connect({ servers: server.url });
    try {
      const jsm = await nc.jetstreamManager();
      const info = await jsm.streams.info("EVENTS");
      expect(info.config.subjects).toEqual(["events.>"]);
      expect(info.config.duplicate_window).toBe(nanos(2 * 60_000));
      expect(info.config.storage).toBe("file");
      await (await connectNatsBus({ url: server.url, name: "cfg2", duplicateWindowMs: 60_000 })).close();
      expect((await jsm.streams.info("EVENTS")).config.duplicate_window).toBe(nanos(60_000));
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("keeps a notice channel in a bounded stream of its own (an hour, 100,000 notices)", async () => {
    const bus = await connectNatsBus({ url: server.url, name: "notices", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    try {
      await bus.announce("bounded", { cheeseId: 1 });
      const info = await (await nc.jetstreamManager()).streams.info("NOTICES_bounded");
      expect(info.config).toMatchObject({
        subjects: ["notices.bounded", "notices.bounded.lease"],
        max_age: nanos(3_600_000),
        max_msgs: 100_000,
        num_replicas: 1,
        storage: "file",
      });
      expect(info.state.messages).toBe(1);
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("takes over a durable made before events were never given up on (max_deliver 10): it no longer drops an event", async () => {
    const nc = await connect({ servers: server.url });
    const bus = await connectNatsBus({ url: server.url, name: "upgrade", logger: silentLogger });
    const durable = `upgraded-${Date.now()}`;
    const subject = `events.upgrade${Date.now()}.thing.happened`;
    try {
      const jsm = await nc.jetstreamManager();
      await jsm.consumers.add("EVENTS", {
        durable_name: durable,
        filter_subject: subject,
        ack_policy: AckPolicy.Explicit,
        max_deliver: 10,
      });
      const deliveries: number[] = [];
      bus.consume({
        durable,
        subjects: [subject],
        maxRedeliveryDelayMs: 50,
        handler: async (event) => {
          deliveries.push(event.deliveryCount);
          if (event.deliveryCount <= 12) throw new Error("not yet");
        },
      });
      await bus.publish({ id: `e-${Date.now()}`, subject, payload: null });
      await expect.poll(() => deliveries.at(-1), { timeout: 10_000 }).toBe(13);
      expect((await jsm.consumers.info("EVENTS", durable)).config.max_deliver).toBe(-1);
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("asks the server for a consumer's subjects only: on nats-server 2.9 through the narrowest wildcard taking them all", async () => {
    const nc = await connect({ servers: server.url });
    const bus = await connectNatsBus({ url: server.url, name: "filters", logger: silentLogger });
    const area = `filters${Date.now()}`;
    const durable = `filtered-${Date.now()}`;
    try {
      const consumer = bus.consume({
        durable,
        subjects: [`events.${area}.cheese.added`, `events.${area}.cheese.status_changed`],
        handler: async () => {},
      });
      await consumer.ready();
      const { config } = await (await nc.jetstreamManager()).consumers.info("EVENTS", durable);
      if (takesSubjectLists(nc))
        expect(config.filter_subjects).toEqual([
          `events.${area}.cheese.added`,
          `events.${area}.cheese.status_changed`,
        ]);
      else expect(config.filter_subject).toBe(`events.${area}.cheese.>`);
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("takes over a durable of one covering filter made on nats-server 2.9 with its exact subjects on 2.10 and later, where it stood", async () => {
    const nc = await connect({ servers: server.url });
    const bus = await connectNatsBus({ url: server.url, name: "refiltered", logger: silentLogger });
    const area = `refiltered${Date.now()}`;
    const durable = `refiltered-${Date.now()}`;
    const [added, changed, deleted] = ["added", "status_changed", "deleted"].map(
      (kind) => `events.${area}.cheese.${kind}`,
    ) as [string, string, string];
    try {
      const jsm = await nc.jetstreamManager();
      // As a service on 2.9 made it: one covering wildcard.
      await jsm.consumers.add("EVENTS", {
        durable_name: durable,
        filter_subject: `events.${area}.cheese.>`,
        ack_policy: AckPolicy.Explicit,
      });
      await bus.publish({ id: `before-${Date.now()}`, subject: added, payload: "before" });
      // Handled and acked before the takeover: not handed out again after it.
      const taken = await (await nc.jetstream().consumers.get("EVENTS", durable)).next({ expires: 5_000 });
      await taken?.ackAck();
      await bus.publish({ id: `gone-${Date.now()}`, subject: deleted, payload: "deleted" });
      await bus.publish({ id: `after-${Date.now()}`, subject: changed, payload: "after" });
      const handled: unknown[] = [];
      const consumer = bus.consume({
        durable,
        subjects: [added, changed],
        handler: async (event) => void handled.push(event.payload),
      });
      await consumer.ready();
      await expect.poll(() => handled, { timeout: 5_000 }).toEqual(["after"]);
      const { config } = await jsm.consumers.info("EVENTS", durable);
      if (takesSubjectLists(nc)) {
        expect(config.filter_subjects).toEqual([added, changed]);
        expect(config.filter_subject ?? "").toBe("");
      } else expect(config.filter_subject).toBe(`events.${area}.cheese.>`);
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("redelivers after ackWaitMs an event whose client went away without acking it (a crashed process)", async () => {
    const nc = await connect({ servers: server.url });
    const bus = await connectNatsBus({ url: server.url, name: "survivor", logger: silentLogger });
    const durable = `crashed-${Date.now()}`;
    const subject = `events.crash${Date.now()}.thing.happened`;
    try {
      const jsm = await nc.jetstreamManager();
      await jsm.consumers.add("EVENTS", {
        durable_name: durable,
        filter_subject: subject,
        ack_policy: AckPolicy.Explicit,
        ack_wait: nanos(500),
      });
      await bus.publish({ id: `e-${Date.now()}`, subject, payload: null });
      // A client takes the event and is gone without a word (no ack, no nak, no working).
      const taken = await (await nc.jetstream().consumers.get("EVENTS", durable)).next({ expires: 5_000 });
      expect(taken?.info.deliveryCount).toBe(1);
      await nc.close();
      const started = Date.now();
      const deliveries: number[] = [];
      bus.consume({
        durable,
        subjects: [subject],
        ackWaitMs: 500,
        handler: async (event) => void deliveries.push(event.deliveryCount),
      });
      await expect.poll(() => deliveries, { timeout: 5_000 }).toEqual([2]);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await bus.close();
      if (!nc.isClosed()) await nc.close();
    }
  });

  it("answers a request whose body is not JSON with a 400 bad_request envelope", async () => {
    const bus = await connectNatsBus({ url: server.url, name: "svc", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    try {
      let called = false;
      bus.serve("test.raw.json", { queue: "svc" }, async () => {
        called = true;
      });
      await bus.ping();
      const reply = await nc.request("test.raw.json", new TextEncoder().encode("{nope"), { timeout: 2_000 });
      expect(JSON.parse(new TextDecoder().decode(reply.data))).toMatchObject({
        ok: false,
        error: { status: 400, type: "bad_request" },
      });
      expect(called).toBe(false);
    } finally {
      await bus.close();
      await nc.close();
    }
  });

  it("sends the requests made in one turn of the event loop, and their replies, in a few socket writes, not one each", async () => {
    const service = await connectNatsBus({ url: server.url, name: "svc", logger: silentLogger });
    const caller = await connectNatsBus({ url: server.url, name: "caller", logger: silentLogger });
    const write = Socket.prototype.write;
    let writes = 0;
    try {
      service.serve("test.coalesce.echo", { queue: "svc" }, async ({ payload }) => payload);
      await service.ping();
      await caller.ping();
      Socket.prototype.write = function (this: Socket, ...args: unknown[]) {
        writes++;
        return (write as (...a: unknown[]) => boolean).apply(this, args);
      } as typeof write;
      // Each request in a callback of its own, as HTTP requests arrive.
      const replies = await Promise.all(
        Array.from(
          { length: 20 },
          (_, i) =>
            new Promise((resolve, reject) =>
              setImmediate(() =>
                caller.request("test.coalesce.echo", { i }, { timeoutMs: 5_000 }).then(resolve, reject),
              ),
            ),
        ),
      );
      expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => ({ i })));
      // 20 requests and 20 replies: one write each way per turn (a reply may be split over turns).
      expect(writes).toBeLessThanOrEqual(6);
    } finally {
      Socket.prototype.write = write;
      await caller.close();
      await service.close();
    }
  });

  it("answers a key-value read or write while NATS is down with a 503 BusUnavailableError, not a bare client error", async () => {
    const own = await startNatsServer();
    const bus = await connectNatsBus({ url: own.url, name: "down", logger: silentLogger });
    try {
      const kv = await bus.kv("down_test");
      await kv.put("k", new TextEncoder().encode("v"));
      await own.stop();
      const [read, write] = await Promise.all([
        kv.get("k").catch((e: unknown) => e),
        kv.create("other", new TextEncoder().encode("v")).catch((e: unknown) => e),
      ]);
      expect(read).toBeInstanceOf(BusUnavailableError);
      expect((read as BusUnavailableError).body).toMatchObject({ status: 503, type: "service_unavailable" });
      expect(write).toBeInstanceOf(BusUnavailableError);
    } finally {
      await bus.close().catch(() => {});
      await own.stop().catch(() => {});
    }
  });

  it("fails a request or key-value read made while NATS is down at once, answers normally once it is back, and tells of both", async () => {
    // nats.js drops what is published while it is disconnected when it dials again: before, such
    // a request waited for its whole time-out, however soon the server was back.
    const port = await freePort();
    const store = tempDir("nats-restart");
    let server = await natsServerOn(port, store.path);
    const url = `nats://127.0.0.1:${port}`;
    const service = await connectNatsBus({ url, name: "svc", logger: silentLogger });
    const caller = await connectNatsBus({ url, name: "caller", logger: silentLogger });
    try {
      service.serve("test.restart.echo", { queue: "svc" }, async ({ payload }) => payload);
      const kv = await caller.kv("restart_test");
      await kv.put("k", new TextEncoder().encode("v"));
      expect(await caller.request("test.restart.echo", 1, { timeoutMs: 2_000 })).toBe(1);
      const changes: boolean[] = [];
      caller.onConnectionChange((connected) => changes.push(connected));

      await killed(server);
      await expect.poll(() => changes).toEqual([false]);
      // Each attempt: what it ended with, and whether it ended well within its time-out.
      const outcome = async (attempt: () => Promise<unknown>) => {
        const started = Date.now();
        const result = await attempt().then(
          () => "answered",
          (e: unknown) => (e instanceof Error ? e.constructor.name : String(e)),
        );
        return `${result} ${Date.now() - started < 1_000 ? "at once" : "after waiting"}`;
      };
      const request = (bus: MessageBus) => () => bus.request("test.restart.echo", 2, { timeoutMs: 3_000 });
      await expect
        .poll(() => outcome(request(caller)), { timeout: 8_000, interval: 20 })
        .toBe("BusUnavailableError at once");
      expect(await outcome(() => kv.get("k"))).toBe("BusUnavailableError at once");

      server = await natsServerOn(port, store.path);
      // Until both clients have reconnected (0.5 to 1 s) the request fails at once; then it is answered.
      await expect
        .poll(() => outcome(request(caller)), { timeout: 5_000, interval: 20 })
        .toBe("answered at once");
      expect(await outcome(() => kv.get("k"))).toBe("answered at once");
      expect(changes, "told of the drop, then of the reconnect").toEqual([false, true]);
    } finally {
      await caller.close().catch(() => {});
      await service.close().catch(() => {});
      await killed(server);
      store.remove();
    }
  });

  it("opens a key-value bucket asked for while the server stalls past a request's time-out once it answers, rather than failing", async () => {
    // What a service opening a bucket another replica has just made on a loaded cluster meets: the
    // stream answers nothing until its first leader is elected. A stopped (SIGSTOP) server is that
    // silence on one host. Before, the open failed with the client's TIMEOUT and the service exited.
    const port = await freePort();
    const store = tempDir("nats-stall");
    const server = await natsServerOn(port, store.path);
    const warned: string[] = [];
    const bus = await connectNatsBus({
      url: `nats://127.0.0.1:${port}`,
      name: "stall",
      logger: { ...silentLogger, warn: (_details, message) => warned.push(message) },
    });
    try {
      server.kill("SIGSTOP");
      const opening = bus.kv("stall_test");
      // Past the JetStream request's 5 s time-out, within the client's ping allowance (2 × 3 s).
      await new Promise((resolve) => setTimeout(resolve, 5_500));
      server.kill("SIGCONT");
      const kv = await opening;
      await kv.put("k", new TextEncoder().encode("v"));
      expect(new TextDecoder().decode((await kv.get("k"))?.value)).toBe("v");
      // The operator is told of the wait.
      expect(warned).toContain("bucket stall_test: JetStream did not answer in time; asking again");
    } finally {
      server.kill("SIGCONT");
      await bus.close().catch(() => {});
      await killed(server);
      store.remove();
    }
  }, 20_000);

  it("consumes again at once after a NATS restart, with a consumer started during the outage too, each event once", async () => {
    // A consumer's JetStream requests (creating or checking its durable) sent while the
    // connection is down are dropped by nats.js when it dials again: each waited out its 5 s
    // time-out, then the loop's 1 s pause, and events flowed again up to ~6 s after the restart.
    const port = await freePort();
    const store = tempDir("nats-restart-consume");
    let server = await natsServerOn(port, store.path);
    const bus = await connectNatsBus({ url: `nats://127.0.0.1:${port}`, name: "sub", logger: silentLogger });
    const seen: string[] = [];
    const subject = "events.outage.thing.happened";
    // nats-server may lose an ack it had confirmed when SIGKILLed (it writes a consumer's state
    // lazily): an event may come again after its ack wait, and must not hold the next one back.
    const consume = (durable: string) =>
      bus.consume({
        durable,
        subjects: ["events.outage.>"],
        maxInFlight: 10,
        handler: async (event) => {
          seen.push(`${durable}:${event.id}`);
        },
      });
    try {
      consume("running");
      await bus.publish({ id: "before", subject, payload: 1 });
      await expect.poll(() => seen, { timeout: 5_000 }).toEqual(["running:before"]);

      await killed(server);
      // Once the client knows the connection is down (a publish then fails at once)…
      await expect
        .poll(() => bus.publish({ id: "down", subject, payload: 2 }).catch((e: unknown) => e), {
          timeout: 8_000,
          interval: 20,
        })
        .toBeInstanceOf(BusUnavailableError);
      // …a consumer is started (a service starting its projections, or a loop starting over).
      consume("late");
      server = await natsServerOn(port, store.path);
      // The first publish the client's connection gets through, once it has reconnected…
      await expect
        .poll(
          () =>
            bus.publish({ id: "after", subject, payload: 3 }).then(
              () => "stored",
              (e: unknown) => e,
            ),
          { timeout: 8_000, interval: 20 },
        )
        .toBe("stored");
      const stored = Date.now();
      const handled = () => ["running:after", "late:before", "late:after"].every((e) => seen.includes(e));
      await expect.poll(handled, { timeout: 10_000, interval: 20 }).toBe(true);
      // …is handled by both within a second (before: the late one up to ~6 s later).
      expect(Date.now() - stored).toBeLessThan(1_000);
      // Nothing lost, and the new event once per durable.
      expect(seen.filter((e) => e.endsWith(":after")).sort()).toEqual(["late:after", "running:after"]);
    } finally {
      await bus.close().catch(() => {});
      await killed(server);
      store.remove();
    }
  });

  it("starts a notice follower over after a NATS restart, telling it so, and its barriers cover what comes after", async () => {
    const port = await freePort();
    const store = tempDir("nats-restart-notices");
    let server = await natsServerOn(port, store.path);
    const url = `nats://127.0.0.1:${port}`;
    const announcer = await connectNatsBus({ url, name: "announcer", logger: silentLogger });
    const followerBus = await connectNatsBus({ url, name: "follower", logger: silentLogger });
    const told: string[] = [];
    const follower = followerBus.follow("restarts", {
      onNotice: (payload) => told.push(JSON.stringify(payload)),
      onReset: () => told.push("reset"),
    });
    try {
      await expect.poll(() => follower.barrier(), { timeout: 5_000 }).toBe(true);
      await announcer.announce("restarts", 1);
      expect(await follower.barrier()).toBe(true);
      expect(told).toEqual(["reset", "1"]);

      await killed(server);
      // While it is down a barrier cannot hold (notices may be announced meanwhile elsewhere).
      await expect.poll(() => follower.barrier(), { timeout: 8_000, interval: 20 }).toBe(false);
      server = await natsServerOn(port, store.path);
      await expect.poll(() => follower.barrier(), { timeout: 8_000, interval: 50 }).toBe(true);
      expect(told).toEqual(["reset", "1", "reset"]);
      await expect
        .poll(() => announcer.announce("restarts", 2).then(() => "stored", String), { timeout: 8_000 })
        .toBe("stored");
      expect(await follower.barrier()).toBe(true);
      expect(told).toEqual(["reset", "1", "reset", "2"]);
    } finally {
      await followerBus.close().catch(() => {});
      await announcer.close().catch(() => {});
      await killed(server);
      store.remove();
    }
  });

  it("has an announcer's follower take the lease records alone, none of the notices, its own or another announcer's", async () => {
    const channel = `split${Date.now()}`;
    const first = await connectNatsBus({ url: server.url, name: "announcer1", logger: silentLogger });
    const second = await connectNatsBus({ url: server.url, name: "announcer2", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    try {
      for (let n = 0; n < 5; n++) {
        await first.announce(channel, n);
        await second.announce(channel, n);
      }
      const h = natsHeaders();
      h.set(LEASE_HEADER, "ghost released");
      const release = await nc
        .jetstream()
        .publish(`notices.${channel}.lease`, new Uint8Array(), { headers: h });
      const jsm = await nc.jetstreamManager();
      const followers = async () => {
        const infos = [];
        for await (const info of jsm.consumers.list(`NOTICES_${channel}`)) infos.push(info);
        return infos;
      };
      // Each announcer's consumer is handed the release, stored after the ten notices, and nothing else.
      await expect
        .poll(async () =>
          (await followers()).map((info) => [info.delivered.consumer_seq, info.delivered.stream_seq]),
        )
        .toEqual([
          [1, release.seq],
          [1, release.seq],
        ]);
      expect((await followers()).map((info) => info.config.filter_subject)).toEqual([
        `notices.${channel}.lease`,
        `notices.${channel}.lease`,
      ]);
    } finally {
      await nc.close();
      await first.close();
      await second.close();
    }
  });

  it("has an announce wait for a silent read-lease holder until its lease runs out, and only until it says it applied the notice", async () => {
    const channel = `leased${Date.now()}`;
    const announcer = await connectNatsBus({ url: server.url, name: "announcer", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    const js = nc.jetstream();
    const grant = (n: number) => {
      const h = natsHeaders();
      h.set(LEASE_HEADER, `ghost ${n}`);
      return js.publish(`notices.${channel}.lease`, new Uint8Array(), { headers: h });
    };
    try {
      // Its own follower of the channel started: no holder from before is known for a lease.
      await announcer.announce(channel, 0);
      // A holder that takes a grant and then says nothing (a gateway cut off, or stopped dead).
      await grant(1);
      const before = performance.now();
      await announcer.announce(channel, 1);
      expect(performance.now() - before).toBeGreaterThan(LEASE_COUNTED_BY_ANNOUNCER_MS - 500);
      // Renewed, and this time it says it applied everything: the announce does not wait it out.
      await grant(2);
      const acking = setInterval(
        () => nc.publish(`notices.${channel}.applied`, JSON.stringify({ holder: "ghost", seq: 1_000_000 })),
        20,
      );
      try {
        const start = performance.now();
        await announcer.announce(channel, 2);
        expect(performance.now() - start).toBeLessThan(LEASE_COUNTED_BY_ANNOUNCER_MS / 2);
      } finally {
        clearInterval(acking);
      }
    } finally {
      await nc.close();
      await announcer.close();
    }
  });

  it("has a starting announcer read back the grants before it: no blind wait without a holder, a silent holder's grant waited out, a stream made again counted blind", async () => {
    const channel = `replayed${Date.now()}`;
    const nc = await connect({ servers: server.url });
    const js = nc.jetstream();
    const grant = (n: number) => {
      const h = natsHeaders();
      h.set(LEASE_HEADER, `ghost ${n}`);
      return js.publish(`notices.${channel}.lease`, new Uint8Array(), { headers: h });
    };
    const buses: MessageBus[] = [];
    /** A catalogue replica that starts now: its first announce, and how long it took. */
    const firstAnnounce = async (payload: number) => {
      const bus = await connectNatsBus({
        url: server.url,
        name: `announcer${payload}`,
        logger: silentLogger,
      });
      buses.push(bus);
      const start = performance.now();
      await bus.announce(channel, payload);
      return performance.now() - start;
    };
    try {
      // No lease holder on the channel: the first write does not wait a lease blind.
      expect(await firstAnnounce(0)).toBeLessThan(LEASE_COUNTED_BY_ANNOUNCER_MS / 2);
      // A holder took a grant before the next replica started, then fell silent: it is waited out.
      await grant(1);
      expect(await firstAnnounce(1)).toBeGreaterThan(LEASE_COUNTED_BY_ANNOUNCER_MS - 500);
      // The same holder renewing and saying what it applied: waited for only until it says so.
      await grant(2);
      const acking = setInterval(
        () => nc.publish(`notices.${channel}.applied`, JSON.stringify({ holder: "ghost", seq: 1_000_000 })),
        20,
      );
      try {
        expect(await firstAnnounce(2)).toBeLessThan(LEASE_COUNTED_BY_ANNOUNCER_MS / 2);
      } finally {
        clearInterval(acking);
      }
      // The stream deleted and made again: a lease on the one before cannot be read back.
      await (await nc.jetstreamManager()).streams.delete(`NOTICES_${channel}`);
      expect(await firstAnnounce(3)).toBeGreaterThan(LEASE_COUNTED_BY_ANNOUNCER_MS - 500);
    } finally {
      for (const bus of buses) await bus.close();
      await nc.close();
    }
  });

  it("holds a notice follower's barrier once every notice has left the stream, and covers the next notice", async () => {
    const channel = `emptied${Date.now()}`;
    const announcer = await connectNatsBus({ url: server.url, name: "announcer", logger: silentLogger });
    const followerBus = await connectNatsBus({ url: server.url, name: "follower", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    const told: unknown[] = [];
    const follower = followerBus.follow(channel, {
      onNotice: (payload) => told.push(payload),
      onReset: () => {},
    });
    try {
      await expect.poll(() => follower.barrier(), { timeout: 5_000 }).toBe(true);
      await announcer.announce(channel, 1);
      await announcer.announce(channel, 2);
      expect(await follower.barrier()).toBe(true);
      // As when every notice aged out: no message left, the stream's last sequence still 2.
      await (await nc.jetstreamManager()).streams.purge(`NOTICES_${channel}`);
      expect(await follower.barrier()).toBe(true);
      await announcer.announce(channel, 3);
      expect(await follower.barrier()).toBe(true);
      expect(told).toEqual([1, 2, 3]);
    } finally {
      await nc.close();
      await followerBus.close();
      await announcer.close();
    }
  });

  it("leaves no consumer on a notice channel's stream once its followers are closed", async () => {
    const channel = `left${Date.now()}`;
    const announcer = await connectNatsBus({ url: server.url, name: "announcer", logger: silentLogger });
    const followerBus = await connectNatsBus({ url: server.url, name: "follower", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    const jsm = await nc.jetstreamManager();
    const consumers = () => consumersOn(jsm, `NOTICES_${channel}`);
    try {
      const follower = followerBus.follow(channel, { onNotice: () => {}, onReset: () => {} });
      await expect.poll(() => follower.barrier(), { timeout: 5_000 }).toBe(true);
      await announcer.announce(channel, 1);
      // The follower's own, and the announcer's (which follows the channel's lease records).
      expect(await consumers()).toBe(2);
      await follower.close();
      await expect.poll(consumers).toBe(1);
      await announcer.close();
      await expect.poll(consumers).toBe(0);
    } finally {
      await nc.close();
      await followerBus.close();
      await announcer.close();
    }
  });

  it("leaves no consumer on a bucket's stream once its watcher is closed", async () => {
    const bucket = `watched${Date.now()}`;
    const bus = await connectNatsBus({ url: server.url, name: "watcher", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    const jsm = await nc.jetstreamManager();
    const consumers = () => consumersOn(jsm, `KV_${bucket}`);
    try {
      const kv = await bus.kv(bucket);
      const seen: string[] = [];
      const watcher = kv.watch(">", (change) => seen.push(change.key));
      await expect
        .poll(
          async () => {
            await kv.put("k", new TextEncoder().encode("1"));
            return seen.length;
          },
          { timeout: 10_000 },
        )
        .toBeGreaterThan(0);
      expect(await consumers()).toBeGreaterThan(0);
      // nats.js's watcher is an ordered push consumer, which the server removes once no one
      // listens (after its 5 s inactive threshold); a watcher that did not stop would keep it.
      await watcher.close();
      await expect.poll(consumers, { timeout: 15_000, interval: 250 }).toBe(0);
    } finally {
      await nc.close();
      await bus.close();
    }
  }, 30_000);

  it("stores the notices announced in one turn as one message, handed to a follower one by one in order", async () => {
    const channel = `together${Date.now()}`;
    const announcer = await connectNatsBus({ url: server.url, name: "announcer", logger: silentLogger });
    const followerBus = await connectNatsBus({ url: server.url, name: "follower", logger: silentLogger });
    const nc = await connect({ servers: server.url });
    const told: unknown[] = [];
    let resets = 0;
    const follower = followerBus.follow(channel, {
      onNotice: (payload) => told.push(payload),
      onReset: () => resets++,
    });
    try {
      await expect.poll(() => follower.barrier(), { timeout: 5_000 }).toBe(true);
      const stream = async () =>
        (await (await nc.jetstreamManager()).streams.info(`NOTICES_${channel}`)).state;
      const before = await stream();
      resets = 0;
      // Five writes answered together (one group commit): five announces in one turn.
      await Promise.all([1, 2, 3, 4, 5].map((n) => announcer.announce(channel, { n })));
      await announcer.announce(channel, { n: 6 });
      expect(await follower.barrier()).toBe(true);
      expect(told).toEqual([1, 2, 3, 4, 5, 6].map((n) => ({ n })));
      expect(resets).toBe(0);
      // Grants of the follower's lease may have been stored meanwhile: count the notices' subject.
      const after = await stream();
      const notices = await (await nc.jetstreamManager()).streams.info(`NOTICES_${channel}`, {
        subjects_filter: `notices.${channel}`,
      });
      expect(after.last_seq).toBeGreaterThan(before.last_seq);
      expect(notices.state.subjects?.[`notices.${channel}`]).toBe(2);
    } finally {
      await nc.close();
      await followerBus.close();
      await announcer.close();
    }
  });

  it("closes at once while NATS is down, serving and consuming, rather than waiting for a reconnect to drain", async () => {
    const port = await freePort();
    const store = tempDir("nats-down-close");
    const server = await natsServerOn(port, store.path);
    const bus = await connectNatsBus({ url: `nats://127.0.0.1:${port}`, name: "svc", logger: silentLogger });
    try {
      bus.serve("test.down.echo", { queue: "svc" }, async ({ payload }) => payload);
      bus.consume({ durable: "down_close", subjects: ["events.down.>"], handler: async () => {} });
      expect(await bus.request("test.down.echo", 1, { timeoutMs: 2_000 })).toBe(1);
      await killed(server);
      // Once the client knows the connection is down (a request then fails at once)…
      await expect
        .poll(() => bus.request("test.down.echo", 2, { timeoutMs: 500 }).catch((e: unknown) => e))
        .toBeInstanceOf(BusUnavailableError);
      // A consumer started now asks JetStream for its durable, and that request waits for its time-out.
      bus.consume({ durable: "down_late", subjects: ["events.late.>"], handler: async () => {} });
      // …closing does not wait for a server that is not there (before: until it came back, or the
      // JetStream request's time-out).
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        bus.close().then(() => "closed"),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve("still closing after 3 s"), 3_000);
        }),
      ]).finally(() => clearTimeout(timer));
      expect(outcome).toBe("closed");
    } finally {
      await killed(server);
      store.remove();
    }
  });
});

describe("notice channels on a three-node NATS cluster", () => {
  let cluster: NatsClusterHandle | undefined;
  const buses: MessageBus[] = [];
  /** What the buses warned of or failed at (a lease not renewed, a follower retrying): told on a failure. */
  const logged: string[] = [];
  const logger: BusLogger = {
    info: () => {},
    warn: (details, message) => logged.push(`${message}: ${String(details.err ?? "")}`),
    error: (details, message) => logged.push(`${message}: ${String(details.err ?? "")}`),
  };

  afterAll(async () => {
    await Promise.all(buses.map((bus) => bus.close().catch(() => {})));
    await cluster?.stop();
  });

  /** Runs `check`; if it fails, fails with what the buses logged meanwhile. */
  async function tellingLogged(check: () => Promise<unknown>): Promise<void> {
    try {
      await check();
    } catch (error) {
      throw new Error(`the buses logged: ${logged.length ? logged.join(" | ") : "nothing"}`, {
        cause: error,
      });
    }
  }

  /** A bus on one server of the cluster (healthy: its meta leader elected). */
  async function busOn(url: string, name: string): Promise<MessageBus> {
    const bus = await connectNatsBus({ url, name, replicas: 3, logger });
    buses.push(bus);
    return bus;
  }

  it("has a barrier taken on one server after an announce acknowledged through another always cover it", async () => {
    cluster = await startNatsCluster(3);
    const [first, , third] = cluster.nodes.map((node) => node.url) as [string, string, string];
    const announcer = await busOn(first, "announcer");
    const followerBus = await busOn(third, "follower");
    const channel = `cluster_${Date.now().toString(36)}`;
    // The channel's stream, replicated on all three (the announcer makes it on its first announce).
    await announcer.announce(channel, { n: 0 });
    const told: unknown[] = [];
    const follower = followerBus.follow(channel, { onNotice: (p) => told.push(p), onReset: () => {} });
    await expect.poll(() => follower.barrier(), { timeout: 10_000, interval: 50 }).toBe(true);
    // A client hears of each notice through the first server (the announce's acknowledgement) and
    // at once asks the third: its barrier must have the notice there, whichever route it takes.
    for (let n = 1; n <= 300; n++) {
      await announcer.announce(channel, { n });
      expect(await follower.barrier()).toBe(true);
      expect(told.at(-1), `round ${n}`).toEqual({ n });
    }
    expect(told).toEqual(Array.from({ length: 300 }, (_, i) => ({ n: i + 1 })));
  }, 60_000);

  it("has a follower on another server that holds its read lease have every announce acknowledged through the first", async () => {
    cluster ??= await startNatsCluster(3);
    const [first, second, third] = cluster.nodes.map((node) => node.url) as [string, string, string];
    const announcer = await busOn(first, "lease-announcer");
    const channel = `leases_${Date.now().toString(36)}`;
    await announcer.announce(channel, { n: 0 });
    const followers = await Promise.all(
      [second, third].map(async (url) => {
        const told: unknown[] = [];
        const follow = (await busOn(url, "lease-follower")).follow(channel, {
          onNotice: (p) => told.push(p),
          onReset: () => {},
        });
        return { told, follow };
      }),
    );
    // Each has started (it holds a lease once). Not both at one moment: on a loaded machine a grant
    // can take most of a lease to come back, and each is current only part of the time.
    for (const { follow } of followers)
      await tellingLogged(() =>
        expect.poll(() => follow.current(), { timeout: 10_000, interval: 20 }).toBe(true),
      );
    // No barrier, no request: the announce waited for each holder to apply its notice. A follower
    // whose lease ran out meanwhile (a renewal starved on a loaded machine) is not current, and
    // an announce does not wait for it; once it holds a lease again it has every notice before.
    let checked = 0;
    for (let n = 1; n <= 300; n++) {
      await announcer.announce(channel, { n });
      for (const { told, follow } of followers) {
        if (!follow.current()) {
          await tellingLogged(() =>
            expect.poll(() => follow.current(), { timeout: 10_000, interval: 20 }).toBe(true),
          );
          expect(told, `round ${n}, after the lease came back`).toContainEqual({ n });
          continue;
        }
        expect(told.at(-1), `round ${n}`).toEqual({ n });
        checked++;
      }
    }
    // Some rounds were checked while the leases held (on an idle machine, all 600).
    expect(checked).toBeGreaterThan(0);
  }, 60_000);
});

/** How many consumers the stream has, ephemeral ones included. */
async function consumersOn(jsm: JetStreamManager, stream: string): Promise<number> {
  let count = 0;
  for await (const _ of jsm.consumers.list(stream)) count++;
  return count;
}

/** A nats-server with JetStream on `port` and the store `dir`, accepting connections. */
async function natsServerOn(port: number, dir: string): Promise<ChildProcess> {
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], {
    stdio: "ignore",
  });
  await expect.poll(() => acceptsConnections(port), { timeout: 10_000 }).toBe(true);
  return child;
}

/** SIGKILLs it (no goodbye to its clients) and waits until it is gone. */
async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}
