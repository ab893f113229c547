import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadlineMs, describeReport, type Fixtures, fuzz, startFuzzTarget } from "./support/fuzz.ts";
import type { Schema } from "./support/fuzz-schema.ts";
import type { RunningSystem } from "./support/system.ts";

/**
 * The fuzz suite: every operation of the served OpenAPI document with valid, boundary and hostile
 * input (wrong types, huge strings, deep nesting, bad UTF-8, huge headers, bad credentials, other
 * customers' ids), against the whole system. `pnpm test` sends a bounded run under a fresh seed;
 * `pnpm fuzz --seed N --runs N` replays one or runs long (docs/security.md).
 */
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const runs = Number(process.env.FUZZ_RUNS ?? 2000);
let system: RunningSystem;
let document: Schema;
let fixtures: Fixtures;

beforeAll(async () => {
  ({ system, document, fixtures } = await startFuzzTarget());
});
afterAll(async () => {
  await system?.stop();
});

describe("fuzzing every operation of the OpenAPI document", () => {
  it(
    `answers ${runs} generated requests (seed ${seed}) without a 5xx or a hang, each as the document says`,
    async () => {
      console.info(`fuzz seed ${seed} (replay: pnpm fuzz --seed ${seed} --runs ${runs})`);
      const report = await fuzz({ system, document, fixtures, seed, runs, deadlineMs });
      console.info(describeReport(report));
      expect(report.findings, describeReport(report)).toEqual([]);
      // Generation reached past the front door: some valid requests succeeded, some were refused.
      expect(Object.keys(report.statuses).some((s) => s.startsWith("2"))).toBe(true);
      expect(Object.keys(report.statuses).some((s) => s.startsWith("4"))).toBe(true);
      // The fixture customers stay signed in for the whole run: requests with their own valid
      // credentials reach the handlers instead of stopping at authentication.
      expect(report.asCustomer.sent).toBeGreaterThan(runs / 10);
      expect(report.asCustomer.unauthorized, describeReport(report)).toBe(0);
    },
    Math.max(120_000, runs * 100),
  );
});
