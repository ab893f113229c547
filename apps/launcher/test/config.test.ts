import { describe, expect, it } from "vitest";
import { backendProcesses, layoutMessage } from "../src/config.ts";

describe("the launcher's line on how the services share processes", () => {
  it("names the services that share a process, as they are started", () => {
    expect(backendProcesses("auto")).toContainEqual(["ordering", "customer", "notification"]);
    expect(layoutMessage("auto")).toBe(
      "running the services as processes over NATS (ordering, customer and notification share one)",
    );
  });

  it("says each service runs alone when none shares", () => {
    expect(backendProcesses("separate").every((services) => services.length === 1)).toBe(true);
    expect(layoutMessage("separate")).toBe("running each service as its own process over NATS");
  });
});
