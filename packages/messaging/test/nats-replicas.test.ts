import { type NatsClusterHandle, startNatsCluster, startNatsServer } from "@cheese/testing";
import { connect, nanos } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type BusLogger,
  connectNatsBus,
  KvConflictError,
  type MessageBus,
  ReplicasRefusedError,
} from "../src/index.ts";

/** A logger that keeps its info lines, to see what the bus says it changed. */
function recordingLogger(): BusLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (_, message) => lines.push(message), warn: () => {}, error: () => {} };
}

async function streamInfo(url: string, name: string) {
  const nc = await connect({ servers: url.split(",") });
  try {
    return await (await nc.jetstreamManager()).streams.info(name);
  } finally {
    await nc.close();
  }
}

describe("JetStream replicas and limits on a three-node cluster", () => {
  let cluster: NatsClusterHandle;
  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("updates an R1 EVENTS stream and KV bucket from earlier to R3, with the limits, and says so", async () => {
    const urls = cluster.nodes.map((n) => n.url);
    // What a service of an earlier version made: one replica, no limits.
    const earlier = await connectNatsBus({
      url: urls,
      name: "earlier",
      replicas: 1,
      logger: recordingLogger(),
    });
    await earlier.kv("checkpoints");
    await earlier.close();
    expect((await streamInfo(cluster.url, "EVENTS")).config.num_replicas).toBe(1);
    expect((await streamInfo(cluster.url, "KV_checkpoints")).config.num_replicas).toBe(1);

    const log = recordingLogger();
    const buses: MessageBus[] = [];
    try {
      const bus = await connectNatsBus({
        url: urls,
        name: "now",
        replicas: 3,
        eventsMaxAgeMs: 48 * 3_600_000,
        eventsMaxBytes: 64 * 1024 * 1024,
        logger: log,
      });
      buses.push(bus);
      await bus.kv("checkpoints");
      await bus.kv("fresh");

      const events = await streamInfo(cluster.url, "EVENTS");
      expect(events.config).toMatchObject({
        num_replicas: 3,
        max_age: nanos(48 * 3_600_000),
        max_bytes: 64 * 1024 * 1024,
        subjects: ["events.>"],
      });
      // Three copies on three servers: a leader and two replicas.
      await expect
        .poll(async () => (await streamInfo(cluster.url, "EVENTS")).cluster?.replicas?.length, {
          timeout: 15_000,
        })
        .toBe(2);
      for (const bucket of ["KV_checkpoints", "KV_fresh"])
        expect((await streamInfo(cluster.url, bucket)).config.num_replicas, bucket).toBe(3);

      const eventsLines = log.lines.filter((l) => l.startsWith("stream EVENTS updated"));
      expect(eventsLines).toHaveLength(1);
      expect(eventsLines[0]).toMatch(/num_replicas 1 → 3/);
      expect(eventsLines[0]).toMatch(/max_age 604800s → 172800s/);
      expect(eventsLines[0]).toMatch(/max_bytes 1073741824 → 67108864/);
      expect(log.lines).toContain("stream KV_checkpoints updated: num_replicas 1 → 3");
      // A bucket made with three replicas from the start needed no update.
      expect(log.lines.some((l) => l.includes("KV_fresh"))).toBe(false);

      // A second service starting with the same settings changes nothing and says nothing.
      const quiet = recordingLogger();
      buses.push(
        await connectNatsBus({
          url: urls,
          name: "again",
          replicas: 3,
          eventsMaxAgeMs: 48 * 3_600_000,
          eventsMaxBytes: 64 * 1024 * 1024,
          logger: quiet,
        }),
      );
      expect(quiet.lines).toEqual([]);

      // More copies than the cluster has servers: refused, not waited for.
      await expect(
        connectNatsBus({ url: urls, name: "r5", replicas: 5, logger: recordingLogger() }),
      ).rejects.toThrow(ReplicasRefusedError);

      // Events still flow through the replicated stream.
      const got: string[] = [];
      bus.consume({
        durable: "replicas-test",
        subjects: ["events.test.>"],
        handler: async (event) => void got.push(event.id),
      });
      await bus.publish({ id: "evt-r3", subject: "events.test.thing.made", payload: {} });
      await expect.poll(() => got, { timeout: 15_000 }).toEqual(["evt-r3"]);
    } finally {
      for (const b of buses.reverse()) await b.close();
    }
  }, 60_000);

  it("reads a key-value record at the revision just written through another server, 300 rounds (a compare-and-set acts on it)", async () => {
    const [first, , last] = cluster.nodes;
    const writer = await connectNatsBus({
      url: first!.url,
      name: "writer",
      replicas: 3,
      logger: recordingLogger(),
    });
    const reader = await connectNatsBus({
      url: last!.url,
      name: "reader",
      replicas: 3,
      logger: recordingLogger(),
    });
    try {
      const written = await writer.kv("leases");
      const read = await reader.kv("leases");
      await written.put("relay", new TextEncoder().encode("0"));
      // The bucket's leader on the writer's server: the reader's server holds a replica, which
      // learns of a write a moment after the writer is told it is stored.
      await expect
        .poll(
          async () => {
            const leader = (await streamInfo(first!.url, "KV_leases")).cluster?.leader;
            if (leader !== first!.name) await stepDown(first!.url, "KV_leases");
            return leader;
          },
          { timeout: 30_000, interval: 1_000 },
        )
        .toBe(first!.name);
      const stale: string[] = [];
      for (let round = 1; round <= 300; round++) {
        const revision = await written.put("relay", new TextEncoder().encode(String(round)));
        const seen = await read.get("relay");
        if (seen?.revision !== revision) stale.push(`round ${round}: ${seen?.revision} for ${revision}`);
      }
      expect(stale).toEqual([]);
    } finally {
      await reader.close();
      await writer.close();
    }
  }, 90_000);

  /** A client of each server of the cluster, as the replicas of a service are. */
  const busOnEachServer = (name: string) =>
    Promise.all(
      cluster.nodes.map(({ url }, i) =>
        connectNatsBus({ url, name: `${name}-${i}`, replicas: 3, logger: recordingLogger() }),
      ),
    );

  it("acknowledges every publish of one event id made at once through three servers, and stores it once", async () => {
    const buses = await busOnEachServer("relay");
    try {
      const subject = "events.test.relayed.twice";
      const before = (await streamInfo(cluster.nodes[0]!.url, "EVENTS")).state.messages;
      // As two relays in a lease handover publish the same events: each publish is asked while
      // the others of its id are still in flight (JetStream's 10158), and answered once one is stored.
      for (let round = 0; round < 20; round++) {
        const id = `relayed-${round}`;
        const published = await Promise.allSettled(
          buses.flatMap((bus) => [1, 2].map(() => bus.publish({ id, subject, payload: { round } }))),
        );
        expect(published.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))).toEqual([]);
      }
      expect((await streamInfo(cluster.nodes[0]!.url, "EVENTS")).state.messages).toBe(before + 20);
    } finally {
      for (const bus of buses) await bus.close();
    }
  }, 60_000);

  it("replays a dead letter once when clients of three servers replay it at once", async () => {
    const buses = await busOnEachServer("replayer");
    try {
      const [first] = buses as [MessageBus, ...MessageBus[]];
      const subject = "events.test.letter.made";
      const handled: string[] = [];
      let broken = true;
      first.consume({
        durable: "replay-race",
        subjects: [subject],
        maxRedeliveryDelayMs: 50,
        deadLetterAfterMs: 200,
        handler: async (event) => {
          if (broken) throw new Error("down");
          handled.push(event.id);
        },
      });
      for (let round = 0; round < 5; round++) {
        broken = true;
        await first.publish({ id: `letter-${round}`, subject, payload: { round } });
        const letters = first.deadLetters();
        await expect
          .poll(async () => (await letters.list({ durable: "replay-race", limit: 10 })).items.length, {
            timeout: 15_000,
          })
          .toBe(1);
        const [letter] = (await letters.list({ durable: "replay-race", limit: 1 })).items;
        broken = false;
        const replayed = await Promise.allSettled(
          buses.flatMap((bus) => [1, 2].map(() => bus.deadLetters().replay(letter!.id))),
        );
        expect(replayed.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))).toEqual([]);
        await expect.poll(() => handled.filter((id) => id === `letter-${round}`)).toHaveLength(1);
      }
      // Each handled once, a late second replay of an earlier round included.
      expect(handled).toEqual([0, 1, 2, 3, 4].map((round) => `letter-${round}`));
    } finally {
      for (const bus of buses) await bus.close();
    }
  }, 120_000);

  it("answers a compare-and-set that loses a race to a write still in flight with KvConflictError", async () => {
    // Three clients, one on each server, race to create the same keys and then to update them
    // from the same revision: the way two replicas of a service record the same thing at start.
    // A replicated stream refuses a write whose key has another such write in flight with an
    // error of its own (10164, "wrong last sequence" without a sequence; 10071 otherwise).
    const buses = await busOnEachServer("racer");
    try {
      const buckets = await Promise.all(buses.map((bus) => bus.kv("races")));
      const outcome = (settled: PromiseSettledResult<number>[]) =>
        settled.map((result) =>
          result.status === "fulfilled"
            ? "written"
            : result.reason instanceof KvConflictError
              ? "conflict"
              : String(result.reason),
        );
      const seen: string[] = [];
      for (let round = 0; round < 40; round++) {
        const key = `key-${round}`;
        const created = outcome(
          await Promise.allSettled(
            buckets.flatMap((kv) => [1, 2].map((n) => kv.create(key, new TextEncoder().encode(`${n}`)))),
          ),
        );
        const revision = (await buckets[0]!.get(key))!.revision;
        const updated = outcome(
          await Promise.allSettled(
            buckets.flatMap((kv) =>
              [1, 2].map(() => kv.update(key, new TextEncoder().encode("u"), revision)),
            ),
          ),
        );
        for (const results of [created, updated]) {
          seen.push(...results.filter((r) => r !== "written" && r !== "conflict"));
          expect(
            results.filter((r) => r === "written"),
            results.join(", "),
          ).toHaveLength(1);
        }
      }
      expect(seen).toEqual([]);
    } finally {
      for (const bus of buses) await bus.close();
    }
  }, 90_000);
});

/** Asks a stream's leader to step down (another replica is elected). */
async function stepDown(url: string, name: string): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${name}`, undefined, { timeout: 5_000 });
  } finally {
    await nc.close();
  }
}

describe("more than one replica on a server outside any cluster", () => {
  it("is refused with ReplicasRefusedError, whether EVENTS is new or made earlier with one", async () => {
    const server = await startNatsServer();
    try {
      await expect(
        connectNatsBus({ url: server.url, name: "r3", replicas: 3, logger: recordingLogger() }),
      ).rejects.toThrow(ReplicasRefusedError);
      await (
        await connectNatsBus({ url: server.url, name: "r1", replicas: 1, logger: recordingLogger() })
      ).close();
      // The server would accept raising the count of the existing stream and keep one copy.
      const refused = connectNatsBus({ url: server.url, name: "r3", replicas: 3, logger: recordingLogger() });
      await expect(refused).rejects.toThrow(
        /cannot keep 3 replicas: the NATS server is not part of a cluster/,
      );
      expect((await streamInfo(server.url, "EVENTS")).config.num_replicas).toBe(1);
    } finally {
      await server.stop();
    }
  });
});
