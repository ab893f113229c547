import { type CheeseChangeNotice, catalogueRpc, cheeseChangeNotices, orderingRpc } from "@cheese/contracts";
import { callRpc, createInProcessBroker, type MessageBus, serveRpc } from "@cheese/messaging";
import { createLogger, type RunningService } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { start } from "../src/main.ts";

/**
 * Every write to a cheese is told (a change notice) before its reply is sent, so a cache of
 * catalogue replies that has processed everything sent to it before a reply holds nothing older.
 */
const dir = tempDir("catalogue-notices");
let client: MessageBus;
let service: RunningService;
/** Notices and replies in the order the client saw them. */
const seen: string[] = [];

beforeAll(async () => {
  const broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  client = broker.connect();
  client.onBroadcast(cheeseChangeNotices.subject, (payload) => {
    const notice = cheeseChangeNotices.notice.parse(payload) as CheeseChangeNotice;
    seen.push("all" in notice ? "notice all" : `notice ${notice.cheeseId}`);
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

describe("change notices", () => {
  it("tells that everything may have changed when a replica starts", () => {
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
    seen.push(`reply ${cheese.id}`);
    await callRpc(
      client,
      catalogueRpc.updateCheese,
      { cheeseId: cheese.id, changes: { status: "sold" } },
      options,
    );
    seen.push(`reply ${cheese.id}`);
    await callRpc(
      client,
      catalogueRpc.replaceCheese,
      { cheeseId: cheese.id, fields: { name: "Noticed again", status: "pending", organic: true } },
      options,
    );
    seen.push(`reply ${cheese.id}`);
    await callRpc(client, catalogueRpc.deleteCheese, { cheeseId: cheese.id, confirmed: true }, options);
    seen.push(`reply ${cheese.id}`);

    // Each reply comes after at least one notice for its cheese sent since the previous reply.
    const rounds = seen.join(",").split(`reply ${cheese.id}`).slice(0, 4);
    expect(rounds).toHaveLength(4);
    for (const round of rounds) expect(round.split(",")).toContain(`notice ${cheese.id}`);
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
    expect(seen).toEqual([`notice ${cheese.id}`]);
  });
});
