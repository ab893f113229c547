import { metricValue, scrape } from "@cheese/testing";
import { expect } from "vitest";
import type { RunningSystem } from "./running-system.ts";

/**
 * Each service's `/metrics` on the system as it runs, at the health ports its processes log at
 * start (the system must run with `LOG_LEVEL: "info"`). `system` is asked at each call (the suites
 * start it in `beforeAll`).
 */
export function serviceMetrics(system: () => RunningSystem) {
  /** The health endpoints of a service's processes, from their start-up lines. */
  const healthOf = (service: string): string[] => {
    const ports = [
      ...system()
        .output()
        .matchAll(/"service":"(\w+)"[^\n]*?"healthPort":(\d+)/g),
    ]
      .filter(([, name]) => name === service)
      .map(([, , port]) => `http://127.0.0.1:${port}`);
    expect(ports.length, `health port of ${service} in the output`).toBeGreaterThan(0);
    return [...new Set(ports)];
  };
  /** A counter over every process of a service. */
  const total = async (service: string, name: string, labels: Record<string, string> = {}) => {
    let sum = 0;
    for (const url of healthOf(service)) sum += metricValue(await scrape(url), name, labels);
    return sum;
  };
  /** A gauge: the largest any process of the service reports (replicas see the same deliveries). */
  const largest = async (service: string, name: string) => {
    let max = 0;
    for (const url of healthOf(service)) max = Math.max(max, metricValue(await scrape(url), name));
    return max;
  };
  return { healthOf, total, largest };
}
