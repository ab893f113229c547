import { type CheeseChangeNotice, catalogueRpc, cheeseChangeNotices, orderingRpc } from "@cheese/contracts";
import {
  BusUnavailableError,
  callRpc,
  createInProcessBroker,
  type Follower,
  type MessageBus,
  RemoteError,
  serveRpc,
} from "@cheese/messaging";
import { createLogger, type RunningService } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start } from "../src/main.ts";

/**
 * Every write to a cheese is told (a change notice, stored on the notice channel) before its reply
 * is sent, so a barrier taken after the reply covers it: a cache of catalogue replies that has
 * applied everything up to that barrier holds nothing older.
 */
const dir = tempDir("catalogue-notices");
let client: MessageBus;
let notices: Follower;
let service: RunningService;
let broker: ReturnType<typeof createInProcessBroker>;
/** Notices and replies in the order the client saw them. */
const seen: string[] = [];

beforeAll(async () => {
  broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  client = broker.connect();
  notices = client.follow(cheeseChangeNotices.channel, {
    onNotice: (payload) => {
      const notice = cheeseChangeNotices.notice.parse(payload) as CheeseChangeNotice;
      seen.push("all" in notice ? "notice all" : `notice ${notice.cheeseId}`);
    },
    onReset: () => {},
  });
  serveRpc(broker.connect(), orderingRpc.activeOrdersForCheese, { queue: "ordering" }, async () => ({
    activeOrders: 0,
  }));
  service = await start({
    env: { DATA_DIR: dir.path, LOG_LEVEL: "silent", RPC_TIMEOUT: "1s" },
    bus: broker.connect(),
    logger: createLogger("catalogue", "silent"),
  });
});

afterAll(async () => {
  await service?.stop();
  await client?.close();
  dir.remove();
});

const options = { timeoutMs: 5_000 };

/** What a reader of the reply does: a barrier, then the reply. */
const replied = async (cheeseId: number) => {
  expect(await notices.barrier()).toBe(true);
  seen.push(`reply ${cheeseId}`);
};

describe("change notices", () => {
  it("tells that everything may have changed when a replica starts", async () => {
    expect(await notices.barrier()).toBe(true);
    expect(seen[0]).toBe("notice all");
  });

  it("tells of a create, an update, a replacement and a deletion before answering each", async () => {
    seen.length = 0;
    const { cheese } = await callRpc(
      client,
      catalogueRpc.createCheese,
      { fields: { name: "Noticed", status: "available", organic: false } },
      options,
    );
    await replied(cheese.id);
    await callRpc(
      client,
      catalogueRpc.updateCheese,
      { cheeseId: cheese.id, changes: { status: "sold" } },
      options,
    );
    await replied(cheese.id);
    await callRpc(
      client,
      catalogueRpc.replaceCheese,
      { cheeseId: cheese.id, fields: { name: "Noticed again", status: "pending", organic: true } },
      options,
    );
    await replied(cheese.id);
    await callRpc(client, catalogueRpc.deleteCheese, { cheeseId: cheese.id, confirmed: true }, options);
    await replied(cheese.id);

    // Each reply comes after at least one notice for its cheese sent since the previous reply.
    const rounds = seen.join(",").split(`reply ${cheese.id}`).slice(0, 4);
    expect(rounds).toHaveLength(4);
    for (const round of rounds) expect(round.split(",")).toContain(`notice ${cheese.id}`);
  });

  it("answers a write whose notice cannot be stored with a 503, not a success nobody's cache heard of", async () => {
    const own = tempDir("catalogue-notices-down");
    const bus = broker.connect();
    // The catalogue's bus, whose notice channel is out of reach (a NATS stream without a leader).
    const unstorable = new Proxy(bus, {
      get: (target, key) => {
        if (key === "announce")
          return async () => {
            throw new BusUnavailableError("announce: no stream leader");
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const other = await start({
      env: { DATA_DIR: own.path, LOG_LEVEL: "silent", RPC_TIMEOUT: "1s" },
      bus: unstorable,
      logger: createLogger("catalogue", "silent"),
    });
    try {
      await service.stop(); // the other replica answers
      const failure = await callRpc(
        client,
        catalogueRpc.createCheese,
        { fields: { name: "Untold", status: "available", organic: false } },
        options,
      ).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(RemoteError);
      expect((failure as RemoteError).body).toMatchObject({
        status: 503,
        type: "service_unavailable",
        message: expect.stringContaining("announce"),
      });
    } finally {
      await other.stop();
      own.remove();
      service = await start({
        env: { DATA_DIR: dir.path, LOG_LEVEL: "silent", RPC_TIMEOUT: "1s" },
        bus: broker.connect(),
        logger: createLogger("catalogue", "silent"),
      });
    }
  });

  it("tells nothing on a read", async () => {
    const { cheese } = await callRpc(
      client,
      catalogueRpc.createCheese,
      { fields: { name: "Read only", status: "available", organic: false } },
      options,
    );
    seen.length = 0;
    await callRpc(client, catalogueRpc.getCheese, { cheeseId: cheese.id }, options);
    // A barrier: a write's notice after the read's reply, and nothing before it.
    await callRpc(
      client,
      catalogueRpc.updateCheese,
      { cheeseId: cheese.id, changes: { status: "sold" } },
      options,
    );
    expect(await notices.barrier()).toBe(true);
    expect(seen).toEqual([`notice ${cheese.id}`]);
  });
});
