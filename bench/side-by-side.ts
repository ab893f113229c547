/**
 * Two checkouts' systems up at once, measured in alternating windows: what a change did to the
 * CPU per answer of every process, with the machine's drift shared by both sides (a full
 * `pnpm bench` moves from one run to the next more than a change of a few percent).
 *
 *   pnpm bench:side-by-side --against=DIR [--scenario=create|get] [--rounds=3] [--seconds=10]
 *
 * `DIR` is another checkout (a `git worktree add` of the commit to compare), installed and built
 * (`node scripts/build.mjs`): its own harness starts its own build. Both are loaded by this
 * checkout's load generator, one copy of it in this process, so the sides differ only in their
 * systems (with each checkout's own copy, two systems of the same commit read 8 % apart, every
 * round the same way). After an unmeasured window on
 * each side, each round runs a 3 s warm-up and a measured window on each side at 32 connections,
 * the order swapped every round; the
 * systems are the single host's layout, each on an empty `DATA_DIR` seeded with 20 cheeses. Both
 * systems' idle work falls in every window, so the figures are higher than a run alone.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { clientOf as ClientOf } from "./harness/compare.ts";
import { runLoad } from "./harness/load.ts";
import type { startSystem as StartSystem, System } from "./harness/system.ts";
import { newCheese } from "./scenarios/cheeses.ts";

const { values } = parseArgs({
  options: {
    against: { type: "string" },
    scenario: { type: "string", default: "create" },
    rounds: { type: "string", default: "3" },
    seconds: { type: "string", default: "10" },
  },
});
if (!values.against) throw new Error("--against=DIR: the other checkout to compare with");
if (values.scenario !== "create" && values.scenario !== "get") throw new Error("--scenario=create|get");
const rounds = Number(values.rounds);
const seconds = Number(values.seconds);

interface Harness {
  startSystem: typeof StartSystem;
  clientOf: typeof ClientOf;
}

async function harnessOf(root: string): Promise<Harness> {
  const [system, compare] = await Promise.all([
    import(join(root, "bench/harness/system.ts")),
    import(join(root, "bench/harness/compare.ts")),
  ]);
  return { startSystem: system.startSystem, clientOf: compare.clientOf };
}

interface Side {
  name: string;
  harness: Harness;
  system: System;
  headers: Record<string, string>;
  cpuMs: Record<string, number>;
  ok: number;
}

const SEEDED = 20;
let sent = 0;
const tag = Date.now().toString(36);

async function start(name: string, root: string): Promise<Side> {
  const harness = await harnessOf(root);
  const dataDir = mkdtempSync(join(tmpdir(), `side-by-side-${name}-`));
  const system = await harness.startSystem({ kind: "single", dataDir, replicas: 1 });
  const client = await harness.clientOf(system.rootUrl, dataDir);
  for (let n = 0; n < SEEDED; n++) {
    const response = await client.fetch("/v2/cheeses", { body: newCheese(n, `Seeded ${name}`) });
    if (response.status !== 201) throw new Error(`seeding ${name}: ${response.status}`);
  }
  return { name, harness, system, headers: client.headers, cpuMs: {}, ok: 0 };
}

const request = (side: Side) =>
  values.scenario === "create"
    ? {
        method: "POST" as const,
        path: "/v2/cheeses",
        body: JSON.stringify(newCheese(sent++, `Bench ${tag} ${side.name}`)),
        headers: side.headers,
      }
    : { method: "GET" as const, path: `/v2/cheeses/${1 + (sent++ % SEEDED)}`, headers: side.headers };

async function window(side: Side, windowSeconds: number, measured: boolean): Promise<void> {
  const before = side.system.usage().byProcess;
  const result = await runLoad({
    url: side.system.rootUrl,
    connections: 32,
    seconds: windowSeconds,
    next: () => request(side),
  });
  if (!measured) return;
  const after = side.system.usage().byProcess;
  const per: string[] = [];
  let total = 0;
  for (const [label, { cpuMs }] of Object.entries(after)) {
    const spent = cpuMs - (before[label]?.cpuMs ?? 0);
    side.cpuMs[label] = (side.cpuMs[label] ?? 0) + spent;
    total += spent;
    per.push(`${label} ${(spent / result.ok).toFixed(3)}`);
  }
  side.ok += result.ok;
  const refused = Object.keys(result.non2xx).length > 0 ? `, non-2xx ${JSON.stringify(result.non2xx)}` : "";
  console.log(
    `${side.name}: ${Math.round(result.okPerSecond)}/s, p99 ${result.p99.toFixed(0)} ms, load ${result.load.toFixed(1)}, ` +
      `${(total / result.ok).toFixed(3)} ms per answer (${per.join(", ")})${refused}`,
  );
}

const sides = [await start("this", resolve(".")), await start("against", resolve(values.against))];
try {
  // A system's first seconds of load run colder (its JIT, its heap growing): unmeasured on both.
  for (const side of sides) await window(side, seconds, false);
  for (let round = 0; round < rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      await window(side, 3, false);
      await window(side, seconds, true);
    }
  }
  console.log(`\n${values.scenario}, CPU ms per 2xx answer over ${rounds} rounds:`);
  for (const side of sides) {
    const total = Object.values(side.cpuMs).reduce((sum, ms) => sum + ms, 0);
    const per = Object.entries(side.cpuMs).map(([label, ms]) => `${label} ${(ms / side.ok).toFixed(3)}`);
    console.log(`${side.name}: ${(total / side.ok).toFixed(3)} (${per.join(", ")})`);
  }
} finally {
  for (const side of sides) {
    await side.system.stop();
    rmSync(side.system.dataDir, { recursive: true, force: true });
  }
}
