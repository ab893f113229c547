import { catalogueRpc } from "@cheese/contracts";
import { callRpc, createInProcessBroker, type InProcessBroker, type MessageBus } from "@cheese/messaging";
import { createLogger, metricsRegistry, type RebuildReply, type RunningService } from "@cheese/service-kit";
import { writeCatalogueHistory } from "@cheese/service-testing/histories";
import { tempDir } from "@cheese/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { start } from "../src/main.ts";

/**
 * Rebuilds without downtime, at the service: while the `cheeses` read model is rebuilt on request
 * (`catalogue.rebuild`, what `pnpm rebuild catalogue cheeses` sends), every read is answered from
 * the live one, a write is read back, and the service stays ready; then reads switch.
 */
const CHEESES = 5_000;
const EVENTS_PER_CHEESE = 10;
let broker: InProcessBroker;
let client: MessageBus;
let service: RunningService;
const dir = tempDir("catalogue-rebuild");
const lines: { msg: string; [field: string]: unknown }[] = [];

beforeAll(async () => {
  await writeCatalogueHistory(dir.path, CHEESES, EVENTS_PER_CHEESE);
  broker = createInProcessBroker({ logger: createLogger("bus", "silent") });
  client = broker.connect();
  service = await start({
    env: { DATA_DIR: dir.path, RPC_TIMEOUT: "5s" },
    bus: broker.connect(),
    logger: createLogger("catalogue", "info", { write: (line: string) => void lines.push(JSON.parse(line)) }),
  });
});

afterAll(async () => {
  await service?.stop();
  await client?.close();
  dir.remove();
});

it("answers every read during a rebuild on request (none 503), reads a write back, and /readyz stays 200", async () => {
  const readyz = async () => (await fetch(`http://127.0.0.1:${service.healthPort}/readyz`)).status;
  expect(await readyz()).toBe(200);
  const metric = () => metricsRegistry.getSingleMetricAsString("cheese_projection_rebuild_progress_ratio");

  let finished = false;
  const rebuilding = client
    .request("catalogue.rebuild", { projection: "cheeses" }, { timeoutMs: 120_000 })
    .finally(() => {
      finished = true;
    }) as Promise<RebuildReply>;
  const failures: string[] = [];
  const statuses = new Set<number>();
  let reads = 0;
  let progressSeen = false;
  let written = false;
  for (let round = 0; !finished; round++) {
    const cheeseId = 1 + ((round * 7919) % CHEESES);
    try {
      const { cheese } = await callRpc(client, catalogueRpc.getCheese, { cheeseId }, { timeoutMs: 5_000 });
      expect(cheese.name).toBe(`Historic ${cheeseId}`);
      const page = await callRpc(
        client,
        catalogueRpc.listCheeses,
        { limit: 20, filters: {} },
        { timeoutMs: 5_000 },
      );
      expect(page.items).toHaveLength(20);
      if (!written) {
        // A write during the rebuild is read back at once: the live read model follows the events.
        written = true;
        await callRpc(
          client,
          catalogueRpc.updateCheese,
          { cheeseId: 1, changes: { origin: "IT" } },
          { timeoutMs: 5_000 },
        );
        const read = await callRpc(client, catalogueRpc.getCheese, { cheeseId: 1 }, { timeoutMs: 5_000 });
        expect(read.cheese.origin).toBe("IT");
      }
      reads++;
    } catch (error) {
      failures.push(String(error));
    }
    statuses.add(await readyz());
    if ((await metric()).includes('projection="cheeses"')) progressSeen = true;
  }
  const reply = await rebuilding;
  expect(reply).toMatchObject({ ok: true, service: "catalogue", projection: "cheeses", generation: 1 });
  // Every cheese's first and last event at least; the updates a later one writes over are left out.
  expect(reply.ok && reply.events).toBeGreaterThanOrEqual(CHEESES * 2);
  expect(failures).toEqual([]);
  expect(reads).toBeGreaterThan(0);
  expect([...statuses]).toEqual([200]);
  expect(progressSeen).toBe(true);
  expect(lines.map((line) => line.msg)).toEqual(
    expect.arrayContaining([
      "projection rebuild requested",
      "projection rebuild started beside the live read models",
      "projection rebuilt: reads switched to it",
    ]),
  );
  // After the switch: the rebuilt read model, with the write made during the rebuild.
  const after = await callRpc(client, catalogueRpc.getCheese, { cheeseId: 1 }, { timeoutMs: 5_000 });
  expect(after.cheese.origin).toBe("IT");
  // A projection the service does not have: said so, with the ones it has.
  expect(await client.request("catalogue.rebuild", { projection: "nope" }, { timeoutMs: 5_000 })).toEqual({
    ok: false,
    error: 'catalogue has no projection "nope"',
    projections: ["cheeses"],
  });
});
