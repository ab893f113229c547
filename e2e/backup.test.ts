import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { outputOf, tempDir } from "@cheese/testing";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import { afterAll, describe, expect, it } from "vitest";
import { login, operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
/** What `pnpm backup` and `pnpm restore` run once built. */
const tool = join(repoRoot, "apps", "launcher", "dist", "backup.js");
const CONFIG_EXIT_CODE = 78;

const dirs = [tempDir("backup-source"), tempDir("backup-copy"), tempDir("backup-restored")];
const [source, copy, restored] = dirs as [(typeof dirs)[0], (typeof dirs)[0], (typeof dirs)[0]];
const systems: RunningSystem[] = [];
let receiver: Receiver | undefined;
afterAll(async () => {
  for (const system of systems) await system.stop();
  await receiver?.close();
  for (const dir of dirs) dir.remove();
});

/** Runs `pnpm backup|restore <dir>` (built) on DATA_DIR; resolves with its exit code and output. */
function run(
  command: "backup" | "restore",
  dir: string,
  dataDir: string,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [tool, command, dir], {
    cwd: repoRoot,
    env: { ...process.env, DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = outputOf(child);
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, output: output() })));
}

async function post(
  system: RunningSystem,
  path: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ id: number }> {
  const response = await fetch(`${system.baseUrl}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as { id: number };
}

/** The status of every delivery of a webhook registration, newest first. */
async function deliveries(
  system: RunningSystem,
  webhookId: number,
  headers: Record<string, string>,
): Promise<string[]> {
  const statuses: string[] = [];
  let cursor: string | null = null;
  do {
    const query = `limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    const response = await fetch(`${system.baseUrl}/webhooks/${webhookId}/deliveries?${query}`, { headers });
    const page = (await response.json()) as { items: { status: string }[]; nextCursor: string | null };
    statuses.push(...page.items.map(({ status }) => status));
    cursor = page.nextCursor;
  } while (cursor);
  return statuses;
}

describe.skipIf(launcherOnly("backing up and restoring the embedded stores"))(
  "pnpm backup and pnpm restore",
  () => {
    it("a backup taken under load, restored into an empty DATA_DIR, has every write acknowledged before it began", async () => {
      receiver = await Receiver.start();
      // A failed attempt is retried soon, so every delivery settles within the poll below.
      const env = {
        WEBHOOK_ALLOW_PRIVATE_URLS: "true",
        WEBHOOK_RETRY_DELAYS: "0,300ms,300ms,300ms,300ms,300ms",
      };
      const system = await startSystem({ dataDir: source.path, env });
      systems.push(system);
      const { bearer, apiKey } = await operatorHeaders(system);
      const customers: TestCustomer[] = [];
      for (let i = 0; i < 3; i++) customers.push(await registerAndLogin(system));
      // A webhook for every new cheese, and five cheeses whose webhooks were delivered (and recorded
      // so) before the backup.
      const hook = await post(
        system,
        "/webhooks",
        { url: receiver.url("/arrivals"), events: ["cheese.new_arrival"] },
        apiKey,
      );
      const early: string[] = [];
      for (let i = 0; i < 5; i++) {
        early.push(
          String((await post(system, "/cheeses", { name: `Delivered ${i}`, pricePerKg: 9 }, bearer)).id),
        );
      }
      await receiver.waitFor("/arrivals", 5);
      await expect.poll(() => deliveries(system, hook.id, apiKey)).toEqual(early.map(() => "delivered"));

      // Writers creating cheeses through the gateway until told to stop, each acknowledgement noted.
      const acked: { id: number; name: string; at: number }[] = [];
      let writing = true;
      let failures = 0;
      const writer = async (n: number) => {
        for (let i = 0; writing && i < 5_000; i++) {
          const name = `Backup ${n}-${i}`;
          const response = await fetch(`${system.baseUrl}/cheeses`, {
            method: "POST",
            headers: { ...bearer, "content-type": "application/json" },
            body: JSON.stringify({ name, pricePerKg: 10 + n }),
          });
          if (response.status === 201) {
            acked.push({ id: ((await response.json()) as { id: number }).id, name, at: Date.now() });
          } else {
            failures++;
            await response.text();
          }
        }
      };
      const writers = Promise.all([0, 1, 2, 3].map(writer));
      await expect.poll(() => acked.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(50);

      const began = Date.now();
      const backup = await run("backup", copy.path, system.dataDir);
      const finished = Date.now();
      expect(backup.code, backup.output).toBe(0);
      // The system served writes while the backup ran.
      await expect.poll(() => acked.filter(({ at }) => at > finished).length).toBeGreaterThan(0);
      writing = false;
      await writers;
      expect(failures).toBe(0);

      // A restore into the DATA_DIR in use is refused, naming the launcher that holds it.
      const busy = await run("restore", copy.path, system.dataDir);
      expect(busy.code).toBe(CONFIG_EXIT_CODE);
      expect(busy.output).toContain(`DATA_DIR ${system.dataDir} is in use by process`);
      await system.stop();
      systems.pop();

      // Not into a DATA_DIR that holds anything.
      const full = join(restored.path, "full");
      mkdirSync(full);
      writeFileSync(join(full, "something"), "");
      const refused = await run("restore", copy.path, full);
      expect(refused.code).toBe(CONFIG_EXIT_CODE);
      expect(refused.output).toContain(`DATA_DIR ${full} is not empty`);

      const target = join(restored.path, "data");
      const restore = await run("restore", copy.path, target);
      expect(restore.code, restore.output).toBe(0);
      // On the same address, so its tokens' issuer is the one before: only the key tells them apart.
      const again = await startSystem({ dataDir: target, env, port: Number(new URL(system.rootUrl).port) });
      systems.push(again);

      // Every cheese acknowledged before the backup began answers, from the rebuilt read model.
      const before = acked.filter(({ at }) => at < began);
      const reader = await operatorHeaders(again);
      expect(before.length).toBeGreaterThanOrEqual(50);
      const missing: number[] = [];
      for (let i = 0; i < before.length; i += 20) {
        const batch = before.slice(i, i + 20);
        const answers = await Promise.all(
          batch.map(async ({ id, name }) => {
            const response = await fetch(`${again.baseUrl}/cheeses/${id}`, { headers: reader.bearer });
            return response.status === 200 && ((await response.json()) as { name: string }).name === name;
          }),
        );
        for (const [j, { id }] of batch.entries()) if (!answers[j]) missing.push(id);
      }
      expect(missing).toEqual([]);
      // No webhook delivered before the backup is sent again. Barrier: a cheese made on the restored
      // system has its webhook delivered, and every delivery the restored system knows is delivered,
      // one per cheese it holds (a re-planned fan-out would make more).
      const last = await post(again, "/cheeses", { name: "After the restore", pricePerKg: 9 }, reader.bearer);
      const cheeses = Number(
        (await fetch(`${again.baseUrl}/cheeses?limit=1`, { headers: reader.bearer })).headers.get(
          "x-total-count",
        ),
      );
      await expect
        .poll(
          async () => {
            const statuses = await deliveries(again, hook.id, reader.apiKey);
            const counts: Record<string, number> = {};
            for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
            return counts;
          },
          { timeout: 30_000 },
        )
        .toEqual({ delivered: cheeses });
      const received = receiver
        .requests("/arrivals")
        .map((request) => envelopeOf(request).data.cheese_id as string);
      expect(received).toContain(String(last.id));
      for (const id of early) expect(received.filter((cheese) => cheese === id)).toHaveLength(1);

      // No token issued before the restore is accepted: the sign-outs (NATS) were not kept, so
      // the restored system signs with a key of its own.
      expect((await fetch(`${again.baseUrl}/cheeses?limit=1`, { headers: bearer })).status).toBe(401);
      // The customers sign in with their passwords: their accounts and personal-data keys came back.
      for (const customer of customers) {
        expect(await login(again, customer.username, customer.password)).toEqual(expect.any(String));
      }
    });
  },
);
