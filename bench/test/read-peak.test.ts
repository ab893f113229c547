import { describe, expect, it } from "vitest";
import { readsPeak, type ScenarioResult } from "../harness/compare.ts";
import type { BenchRequest, FixtureData, HttpScenario } from "../harness/scenario.ts";

const fixture = { name: "f", seed: async () => ({}) as FixtureData };
const ran = (method: BenchRequest["method"], rssPeak: number): ScenarioResult => {
  const scenario: HttpScenario = {
    kind: "http",
    name: `${method} ${rssPeak}`,
    fixture,
    request: () => ({ method, path: "/" }),
  };
  return { scenario, system: [], baseline: [], rssPeak };
};

/** The memory target is for the read load: the report's read peak leaves the writes out. */
describe("the RSS peak under the read load", () => {
  it("is the largest peak of the GET scenarios, not of the writes after them", () => {
    const results = [ran("GET", 600), ran("GET", 640), ran("POST", 720), ran("GET", 610)];
    expect(readsPeak(results, {} as FixtureData)).toBe(640);
  });

  it("is not given for a fixture that only writes", () => {
    expect(readsPeak([ran("POST", 700)], {} as FixtureData)).toBeUndefined();
  });
});
