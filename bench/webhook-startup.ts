/**
 * Start-up of the notification service with a long delivery history: 1,000,000 finished
 * deliveries (3,000,000 events) in its event store and the schedule snapshot a running system
 * would have saved. Measures how long `start()` takes to be ready (the service answers requests
 * and makes due attempts), then how long a new event takes to reach a receiver, then how long the
 * in-memory delivery history takes to be rebuilt in the background. Target: ready within 10 s.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createFileBlobStore } from "@cheese/blob-store";
import { notificationRpc } from "@cheese/contracts";
import { createSqliteEventStore } from "@cheese/event-store";
import { callRpc, createInProcessBroker } from "@cheese/messaging";
import { createLogger } from "@cheese/service-kit";
import { writeHistory } from "@cheese/service-testing/histories";
import { tempDir } from "@cheese/testing";
import { Receiver } from "@cheese/testing/receiver";
import { blobSnapshotStore } from "../services/notification/src/delivery/snapshot.ts";
import { start } from "../services/notification/src/main.ts";

const FINISHED = Number(process.env.BENCH_FINISHED_DELIVERIES ?? 1_000_000);
const TARGET_MS = 10_000;

const data = tempDir("bench-webhooks");
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * The history is written straight into the SQLite adapter's tables (`writeHistory`: through the
 * port it would take one fsync per delivery, about 20 minutes); the webhook's id block goes
 * through the port.
 */
async function writeDeliveries(): Promise<void> {
  const started = performance.now();
  mkdirSync(join(data.path, "notification"), { recursive: true });
  const store = createSqliteEventStore({ file: join(data.path, "notification", "events.sqlite") });
  await store.append("idblock-webhook", [{ type: "IdBlockReserved", data: { first: 1, last: 1 } }], {
    expectedRevision: "no_stream",
  });
  await store.close();
  const { head } = await writeHistory(data.path, "notification", "delivery", FINISHED, (id, at) => {
    const eventId = `evt_${id.toString(16).padStart(32, "0")}`;
    const body = JSON.stringify({
      id: eventId,
      type: "webhook.test",
      created_at: at,
      data: { webhook_id: "1" },
    });
    const facts = {
      deliveryId: id,
      webhookId: 1,
      eventId,
      eventType: "webhook.test",
      body,
      createdAt: at,
      dueAt: at,
    };
    return [
      { type: "DeliveryCreated", data: facts },
      { type: "AttemptStarted", data: { round: 0, attempt: 1, startedAt: at } },
      {
        type: "AttemptSucceeded",
        data: { round: 0, attempt: 1, statusCode: 200, durationMs: 3, finishedAt: at },
      },
    ];
  });

  // The snapshot the scheduler of a running system saves: everything finished, nothing waiting.
  await blobSnapshotStore(createFileBlobStore({ dir: join(data.path, "blobs") })).save({
    version: 1,
    position: head,
    takenAt: new Date().toISOString(),
    deliveries: [],
    webhooks: [],
  });
  console.log(
    `webhooks: wrote ${FINISHED.toLocaleString("en")} finished deliveries (${(FINISHED * 3).toLocaleString("en")} events) in ${seconds(performance.now() - started)}`,
  );
}

await writeDeliveries();
const broker = createInProcessBroker();
const receiver = await Receiver.start();
const env = { DATA_DIR: data.path, WEBHOOK_ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "silent" };
const bus = broker.connect("bench");
const rpc = { timeoutMs: 30_000 };

const startedAt = performance.now();
const service = await start({
  env,
  bus: broker.connect("notification"),
  logger: createLogger("notification", "silent"),
});
const readyMs = performance.now() - startedAt;
console.log(
  `webhooks: notification ready in ${seconds(readyMs)} with ${FINISHED.toLocaleString("en")} finished deliveries ` +
    `(target ${seconds(TARGET_MS)}: ${readyMs <= TARGET_MS ? "met" : "MISSED"})`,
);

const hook = await callRpc(
  bus,
  notificationRpc.createWebhook,
  { url: receiver.url("/bench"), events: ["webhook.test"], description: null },
  rpc,
);
await callRpc(bus, notificationRpc.sendTestEvent, { webhookId: hook.id }, rpc);
await receiver.waitFor("/bench", 1, 60_000);
console.log(`webhooks: first delivery after start in ${seconds(performance.now() - startedAt)}`);

// The delivery history (GET /webhooks/{id}/deliveries) is rebuilt in memory in the background
// with the embedded read models (with MongoDB it is checkpointed and costs nothing at start).
// Reported for information, not waited for to the end.
const HISTORY_WAIT_MS = Number(process.env.BENCH_HISTORY_WAIT_MS ?? 30_000);
const historyDeadline = performance.now() + HISTORY_WAIT_MS;
let historyMs: number | undefined;
while (historyMs === undefined && performance.now() < historyDeadline) {
  try {
    await callRpc(bus, notificationRpc.listDeliveries, { webhookId: hook.id, limit: 1 }, rpc);
    historyMs = performance.now() - startedAt;
  } catch {
    // 503 while it loads
  }
}
console.log(
  historyMs === undefined
    ? `webhooks: in-memory delivery history still loading in the background after ${seconds(HISTORY_WAIT_MS)} (not waited for)`
    : `webhooks: in-memory delivery history loaded in the background in ${seconds(historyMs)}`,
);

await service.stop();
await receiver.close();
data.remove();
