import { describe, expect, it } from "vitest";
import { processUsage, underPid } from "../harness/system.ts";
import { STAGES, saturatedStage } from "../scenarios/order-stages.ts";
import { cpuBetween, sustained } from "../scenarios/placing.ts";

const run = (rate: number, webhookP99: number, missing = 0) => ({ rate, webhookP99, missing });

describe("the highest rate sustained", () => {
  it("is the last rate before the first whose p99 reached a second", () => {
    expect(sustained([run(10, 40), run(20, 300), run(35, 1200), run(50, 900)])?.rate).toBe(20);
  });

  it("stops at a rate whose deliveries did not all arrive, however fast the rest", () => {
    expect(sustained([run(10, 40), run(20, 80, 3), run(35, 90)])?.rate).toBe(10);
  });

  it("is none when the lowest rate already took a second", () => {
    expect(sustained([run(10, 1000)])).toBeUndefined();
  });

  it("is the last rate when every rate stayed within a second", () => {
    expect(sustained([run(10, 40), run(20, 60)])?.rate).toBe(20);
  });
});

describe("the stage that saturates first", () => {
  it("is the stage whose p99 grew the most, not the one slowest at every rate", () => {
    // started→received is slow throughout; created→started is where the queue builds.
    const lowest = [5, 2, 3, 4, 400];
    const limit = [9, 3, 6, 1500, 450];
    expect(saturatedStage(lowest, limit)).toBe("created→started");
  });

  it("names the first stage when the publish is what grew", () => {
    expect(saturatedStage([1, 1, 1, 1, 1], [900, 2, 2, 2, 2])).toBe(STAGES[0]);
  });
});

describe("CPU between two readings", () => {
  it("is per process, largest first, and counts a process that started in between from zero", () => {
    const before = {
      rss: 0,
      byProcess: { gateway: { rss: 0, cpuMs: 100 }, "nats-server": { rss: 0, cpuMs: 50 } },
    };
    const after = {
      rss: 0,
      byProcess: {
        gateway: { rss: 0, cpuMs: 130 },
        "nats-server": { rss: 0, cpuMs: 120 },
        notification: { rss: 0, cpuMs: 40 },
      },
    };
    expect(Object.entries(cpuBetween(before, after))).toEqual([
      ["nats-server", 70],
      ["notification", 40],
      ["gateway", 30],
    ]);
  });
});

describe("a system's processes", () => {
  it("are a process and every process under it, not its parent or siblings", () => {
    const parentOf = new Map([
      [10, 1],
      [11, 10],
      [12, 11],
      [13, 1],
    ]);
    const selected = [10, 11, 12, 13, 1].filter((pid) => underPid(10)(pid, parentOf));
    expect(selected).toEqual([10, 11, 12]);
  });

  it("are read from /proc with their CPU time: this process spends some", () => {
    const usage = processUsage(underPid(process.pid));
    const [label] = Object.keys(usage.byProcess);
    expect(usage.rss).toBeGreaterThan(0);
    expect(usage.byProcess[label!]!.cpuMs).toBeGreaterThan(0);
  });
});
