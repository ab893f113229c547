/**
 * Rebuilds without downtime on a running system (docs/architecture.md, "Rebuilds without
 * downtime"), with 1,000,000 catalogue events (100,000 cheeses, each added and updated 9 times;
 * 10,000 events with --quick) in the embedded store:
 *
 * 1. A version bump: the catalogue's read models as the previous version of its code left them
 *    (a snapshot of `cheeses` at version CHEESES_VERSION - 1), then `pnpm start` on that DATA_DIR.
 *    The catalogue answers from the previous version's read models while it rebuilds its own
 *    version beside them, then switches.
 * 2. A rebuild on request: `pnpm rebuild catalogue cheeses` against the running system.
 *
 * Throughout both, reads go on without pause (a cheese by id, a list page, the gateway's /readyz;
 * the ids spread over every cheese, so the gateway's read cache answers few); every answer must be
 * 200. Prints the answers by status, the time to /readyz and each rebuild's time; exits 1 if any
 * read or /readyz was not 200, or a rebuild did not finish.
 *
 *   pnpm bench:rebuild-online [--quick]
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSqliteEventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import { createLogger, startProjection } from "@cheese/service-kit";
import { writeCatalogueHistory } from "@cheese/service-testing/histories";
import { tempDir } from "@cheese/testing";
import { CHEESES_VERSION, cheesesProjection } from "../services/catalogue/src/projections/cheeses.ts";
import { benchToken, startSystem } from "./harness/system.ts";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const cheeses = quick ? 1_000 : 100_000;
const number = (n: number) => Math.round(n).toLocaleString("en-US");
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Reads without pause until `until` resolves; the answers counted by status. */
async function readThroughout(rootUrl: string, token: string, until: Promise<unknown>) {
  let done = false;
  void until.finally(() => {
    done = true;
  });
  const statuses: Record<string, number> = {};
  const count = (what: string, status: number | string) => {
    const key = `${what} ${status}`;
    statuses[key] = (statuses[key] ?? 0) + 1;
  };
  let round = 0;
  const reader = async () => {
    while (!done) {
      round++;
      const id = 1 + ((round * 7919) % cheeses);
      for (const [what, path] of [
        ["GET /v2/cheeses/{id}", `/v2/cheeses/${id}`],
        [
          "GET /v2/cheeses (a page)",
          `/v2/cheeses?limit=20&status=${["available", "pending", "sold"][round % 3]}`,
        ],
        ["GET /readyz", "/readyz"],
      ] as const) {
        try {
          const response = await fetch(`${rootUrl}${path}`, {
            headers: { authorization: `Bearer ${token}` },
            signal: AbortSignal.timeout(10_000),
          });
          await response.arrayBuffer();
          count(what, response.status);
        } catch (error) {
          count(what, (error as Error).name);
        }
      }
    }
  };
  await Promise.all([reader(), reader(), reader(), reader()]);
  return statuses;
}

function print(title: string, statuses: Record<string, number>) {
  console.log(`  ${title}`);
  for (const [key, n] of Object.entries(statuses).sort()) console.log(`    ${key}: ${number(n)}`);
}

const failedAnswers = (statuses: Record<string, number>) =>
  Object.entries(statuses).filter(([key]) => !key.endsWith(" 200"));

const root = tempDir("bench-rebuild-online");
let failed = false;
try {
  const dataDir = join(root.path, "data");
  const writing = performance.now();
  const { events, file } = await writeCatalogueHistory(dataDir, cheeses, 10);
  console.log(
    `history: ${number(events)} events, ${number(cheeses)} cheeses (${seconds(performance.now() - writing)})`,
  );

  // What the previous version of the catalogue left: its read models' snapshot.
  const previous = CHEESES_VERSION - 1;
  const building = performance.now();
  const store = createSqliteEventStore({ file });
  const readModels = createMemoryReadModels({ snapshotDir: join(dataDir, "catalogue", "read-models") });
  const old = await startProjection({
    ...cheesesProjection,
    version: previous,
    eventStore: store,
    readModels,
    logger: createLogger("bench", "silent"),
  });
  await old.ready;
  await old.close();
  await store.close();
  console.log(`read models of version ${previous} saved (${seconds(performance.now() - building)})`);

  // 1. The version bump: the system started on that DATA_DIR runs version CHEESES_VERSION.
  const system = await startSystem({ kind: "single", dataDir, replicas: 1, env: { LOG_LEVEL: "info" } });
  console.log(`started with version ${CHEESES_VERSION}: /readyz 200 after ${seconds(system.readyMs)}`);
  try {
    const token = await benchToken(system.rootUrl);
    const switched = (async () => {
      const started = performance.now();
      for (;;) {
        if (readFileSync(system.logFile, "utf8").includes("projection rebuilt: reads switched to it"))
          return performance.now() - started;
        if (performance.now() - started > 900_000) throw new Error("the rebuild did not finish in 15 min");
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    const bump = await readThroughout(system.rootUrl, token, switched);
    console.log(
      `version bump: reads switched ${seconds(await switched)} after /readyz (load ${loadavg()[0]!.toFixed(1)})`,
    );
    print("answers during the rebuild:", bump);
    if (failedAnswers(bump).length > 0) failed = true;

    // 2. A rebuild on request, as an operator asks for it.
    const asked = performance.now();
    const command = new Promise<number>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [join(repoRoot, "apps", "launcher", "dist", "rebuild-cli.js"), "catalogue", "cheeses"],
        {
          cwd: repoRoot,
          env: { ...process.env, NATS_URL: "", DATA_DIR: dataDir },
          stdio: ["ignore", "inherit", "inherit"],
        },
      );
      child.once("error", reject);
      child.once("exit", (code) => resolve(code ?? 1));
    });
    const requested = await readThroughout(system.rootUrl, token, command);
    const code = await command;
    console.log(`pnpm rebuild catalogue cheeses: exit ${code} after ${seconds(performance.now() - asked)}`);
    print("answers during the rebuild:", requested);
    if (code !== 0 || failedAnswers(requested).length > 0) failed = true;
  } finally {
    await system.stop();
  }
} catch (error) {
  console.error(error);
  failed = true;
} finally {
  root.remove();
}
console.log(
  failed ? "FAILED: a read was not answered 200, or a rebuild did not finish" : "every read answered 200",
);
process.exit(failed ? 1 : 0);
