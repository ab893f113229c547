/**
 * `pnpm bench`: throughput of the embedded adapters on this machine. Numbers, not pass/fail:
 * compare before and after a change, on the same machine.
 */
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { tempDir } from "@cheese/testing";

async function measure(name: string, operations: number, run: () => Promise<void>): Promise<void> {
  const started = performance.now();
  await run();
  const ms = performance.now() - started;
  console.log(
    `${name.padEnd(48)} ${operations} ops in ${ms.toFixed(0)} ms  (${((operations / ms) * 1000).toFixed(0)} ops/s)`,
  );
}

const dir = tempDir("bench");
const store = createSqliteEventStore({ file: `${dir.path}/events.sqlite` });
await measure("event store: append 1 event, 1,000 streams", 1000, async () => {
  for (let i = 0; i < 1000; i++) {
    await store.append(`bench-${i}`, [{ type: "Happened", data: { i } }], { expectedRevision: "no_stream" });
  }
});
await measure("event store: readAll of 1,000 events", 1000, async () => {
  for await (const _ of store.readAll()) {
    // drain
  }
});
await store.close();
dir.remove();

const docs = createMemoryReadModels().collection("cheeses");
await measure("read models: upsert 10,000 documents", 10_000, async () => {
  for (let id = 1; id <= 10_000; id++) {
    await docs.upsert(id, 1, { $set: { price: id % 97, status: id % 3 ? "available" : "sold" } });
  }
});
await measure("read models: sorted page of 20 among 10,000 (x100)", 100, async () => {
  for (let i = 0; i < 100; i++)
    await docs.find({ status: "available" }, { sort: { price: -1 }, skip: 20, limit: 20 });
});
