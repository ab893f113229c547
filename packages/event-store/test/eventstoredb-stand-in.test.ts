import { EventStoreDBClient, jsonEvent } from "@eventstore/db-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientConnectionString } from "../src/connection-string.ts";
import { createEventStoreDbStore } from "../src/eventstoredb.ts";
import { type EventStore, EventStoreUnavailableError } from "../src/port.ts";
import { eventStoreContract } from "./contract.ts";
import { type EventStoreDbStandIn, startEventStoreDbStandIn } from "./stand-in/eventstoredb.ts";

// The EventStoreDB adapter and the official client, against a stand-in server that speaks the
// client's gRPC protocol (stand-in/eventstoredb.ts says what it copies of the real server).
eventStoreContract("EventStoreDB adapter contract, against the gRPC stand-in", async () => {
  const server = await startEventStoreDbStandIn();
  const store = createEventStoreDbStore({ connectionString: server.connectionString });
  return {
    store,
    endSubscriptions: () => server.endSubscriptions(),
    atomicAppends:
      "the adapter appends stream after stream: @eventstore/db-client 6 has no multi-stream append",
    async cleanup() {
      await store.close();
      await server.close();
    },
  };
});

describe("EventStoreDB adapter, what the server sees", () => {
  let server: EventStoreDbStandIn;
  let store: EventStore;
  beforeAll(async () => {
    server = await startEventStoreDbStandIn();
    store = createEventStoreDbStore({ connectionString: server.connectionString, pingTimeoutMs: 300 });
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  it("a read stopped early ends its call on the server, not only in the client", async () => {
    // More than HTTP/2's flow-control window holds: a call the client leaves open stays open.
    const padding = "x".repeat(500);
    for (let batch = 0; batch < 10; batch++) {
      const events = Array.from({ length: 500 }, (_, n) => ({ type: "Numbered", data: { n, padding } }));
      await store.append("cheese-1", events, {
        expectedRevision: batch === 0 ? "no_stream" : batch * 500 - 1,
      });
    }
    for (let i = 0; i < 20; i++) {
      for await (const _ of store.readAll()) break;
    }
    await expect.poll(() => server.openCalls().reads).toBe(0);
  });

  it("ping answers false within its deadline when the server does not answer, and ends the call", async () => {
    server.stall(true);
    try {
      const started = Date.now();
      expect(await store.ping()).toBe(false);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(store.openReads()).toBe(0);
      await expect.poll(() => server.openCalls().reads).toBe(0);
    } finally {
      server.stall(false);
    }
    expect(await store.ping()).toBe(true);
  });

  it("a subscription's catch-up receives only its categories' events, not everyone's", async () => {
    const before = server.eventsSent();
    for (let i = 0; i < 300; i++) {
      await store.append(`other-${i}`, [{ type: "Other", data: {} }], { expectedRevision: "no_stream" });
    }
    await store.append("quiet-1", [{ type: "Quiet", data: {} }], { expectedRevision: "no_stream" });
    let caughtUp = false;
    const received: string[] = [];
    const subscription = store.subscribe({
      categories: ["quiet"],
      handler: async (event) => {
        received.push(event.streamName);
      },
      onCaughtUp: () => {
        caughtUp = true;
      },
    });
    await expect.poll(() => caughtUp).toBe(true);
    expect(received).toEqual(["quiet-1"]);
    // One event of the category and the metadata scan found nothing: one event crossed the wire.
    expect(server.eventsSent() - before).toBe(1);
    await subscription.close();
    await expect.poll(() => server.openCalls().subscriptions).toBe(0);
  });
});

describe("EventStoreDB adapter, schema versions", () => {
  it("keeps an event's version in its metadata; an event written without one reads as version 1", async () => {
    const server = await startEventStoreDbStandIn();
    const store = createEventStoreDbStore({ connectionString: server.connectionString });
    const client = EventStoreDBClient.connectionString(clientConnectionString(server.connectionString)!);
    try {
      await store.append(
        "cheese-v",
        [{ type: "CheeseAdded", data: {}, version: 2, metadata: { requestId: "r" } }],
        {
          expectedRevision: "no_stream",
        },
      );
      // As an event stored before versions existed, or by another client: no schemaVersion.
      await client.appendToStream(
        "cheese-v",
        jsonEvent({ type: "CheeseRenamed", data: {}, metadata: { requestId: "s" } }),
      );
      const raw: unknown[] = [];
      for await (const resolved of client.readStream("cheese-v")) raw.push(resolved.event?.metadata);
      expect(raw).toEqual([{ requestId: "r", schemaVersion: 2 }, { requestId: "s" }]);
      const read = await store.readStream("cheese-v");
      expect(read.map(({ version, metadata }) => ({ version, metadata }))).toEqual([
        { version: 2, metadata: { requestId: "r" } },
        { version: 1, metadata: { requestId: "s" } },
      ]);
    } finally {
      await client.dispose();
      await store.close();
      await server.close();
    }
  });
});

describe("KurrentDB connection strings", () => {
  it("takes kurrentdb:// as it takes esdb://: the same server, the same events", async () => {
    const server = await startEventStoreDbStandIn();
    const kurrent = createEventStoreDbStore({
      connectionString: server.connectionString.replace(/^esdb:/, "kurrentdb:"),
    });
    const esdb = createEventStoreDbStore({ connectionString: server.connectionString });
    try {
      expect(server.connectionString).toMatch(/^esdb:\/\//);
      await kurrent.append("cheese-kurrent", [{ type: "Made", data: { by: "kurrentdb://" } }], {
        expectedRevision: "no_stream",
      });
      const read = await esdb.readStream("cheese-kurrent");
      expect(read.map((event) => event.data)).toEqual([{ by: "kurrentdb://" }]);
      expect(await kurrent.ping()).toBe(true);
    } finally {
      await kurrent.close();
      await esdb.close();
      await server.close();
    }
  });

  it("hands the client a string it parses, for one node or a cluster found by gossip", () => {
    const cases = {
      "kurrentdb://admin:changeit@db.example.com:2113?tls=true&tlsVerifyCert=false":
        "esdb://admin:changeit@db.example.com:2113?tls=true&tlsVerifyCert=false",
      "kurrentdb+discover://db-1:2113,db-2:2113,db-3:2113": "esdb+discover://db-1:2113,db-2:2113,db-3:2113",
      "esdb://localhost:2113?tls=false": "esdb://localhost:2113?tls=false",
      "esdb+discover://cluster.example.com:2113": "esdb+discover://cluster.example.com:2113",
    };
    for (const [given, handed] of Object.entries(cases)) {
      expect(clientConnectionString(given), given).toBe(handed);
      // The client's own parser, as the adapter calls it: throws on a scheme it does not know.
      expect(() => EventStoreDBClient.connectionString(handed), handed).not.toThrow();
    }
    expect(() => EventStoreDBClient.connectionString("kurrentdb://localhost:2113")).toThrow();
    for (const refused of ["http://localhost:2113", "tcp://localhost:1113", "localhost:2113"])
      expect(() => createEventStoreDbStore({ connectionString: refused }), refused).toThrow(/kurrentdb:\/\//);
  });
});

describe("EventStoreDB adapter, when the server fails over or goes away", () => {
  let server: EventStoreDbStandIn;
  let store: EventStore;
  beforeAll(async () => {
    server = await startEventStoreDbStandIn();
    store = createEventStoreDbStore({ connectionString: server.connectionString, deadlineMs: 2_000 });
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  it("a call safe to repeat is tried once more on the new leader after a not-leader answer", async () => {
    server.answerNotLeader(1);
    await store.append("failover-1", [{ type: "Happened", data: {} }], { expectedRevision: "no_stream" });
    server.answerNotLeader(1);
    await store.append("failover-1", [{ type: "Happened", data: {} }], { expectedRevision: 0 });
    server.answerNotLeader(1);
    expect((await store.readStream("failover-1")).map((event) => event.revision)).toEqual([0, 1]);
    server.answerNotLeader(1);
    expect(await store.headPosition()).toBeGreaterThan(0);
    server.answerNotLeader(1);
    await store.deleteStream("failover-1", { expectedRevision: 1 });
    expect(await store.readStream("failover-1")).toEqual([]);
  });

  it("an append that could be written twice is not repeated: it fails as unavailable, a 503", async () => {
    server.answerNotLeader(1);
    await expect(
      store.append("failover-2", [{ type: "Happened", data: {} }], { expectedRevision: "any" }),
    ).rejects.toBeInstanceOf(EventStoreUnavailableError);
    expect(await store.readStream("failover-2")).toEqual([]);
  });

  it("a second not-leader answer fails the call as unavailable instead of retrying on", async () => {
    server.answerNotLeader(2);
    await expect(store.readStream("failover-1")).rejects.toBeInstanceOf(EventStoreUnavailableError);
  });

  it("while the server is away every call fails as unavailable, and works again once it is back", async () => {
    await store.append("outage-1", [{ type: "Happened", data: {} }], { expectedRevision: "no_stream" });
    await server.goAway();
    try {
      await expect(
        store.append("outage-1", [{ type: "Happened", data: {} }], { expectedRevision: 0 }),
      ).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.readStream("outage-1")).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.headPosition()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(
        (async () => {
          for await (const _ of store.readAll()) break;
        })(),
      ).rejects.toBeInstanceOf(EventStoreUnavailableError);
      expect(await store.ping()).toBe(false);
    } finally {
      await server.comeBack();
    }
    await expect.poll(() => store.ping()).toBe(true);
    await store.append("outage-1", [{ type: "Happened", data: {} }], { expectedRevision: 0 });
    expect((await store.readStream("outage-1")).length).toBe(2);
  });
});
