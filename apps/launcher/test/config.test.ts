import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "@cheese/service-kit/launch";
import { createUser } from "nkeys.js";
import { describe, expect, it } from "vitest";
import { backendProcesses, checkConfiguration, layoutMessage } from "../src/config.ts";

describe("the launcher's check of every process's variables, before anything starts", () => {
  const refusal = (env: Record<string, string>) => {
    try {
      checkConfiguration(env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error("accepted");
  };

  it("refuses a variable only a service reads, naming it (the notification's retry delays, the gateway's keys)", () => {
    expect(refusal({ WEBHOOK_RETRY_DELAYS: "banana" })).toMatch(
      /^invalid configuration:\n {2}WEBHOOK_RETRY_DELAYS: /,
    );
    expect(refusal({ API_KEYS: "nocolon" })).toContain("API_KEYS: entry without a plan");
    expect(refusal({ ORDER_AUTO_APPROVE_DELAY: "-5s" })).toContain("ORDER_AUTO_APPROVE_DELAY");
    expect(refusal({ API_KEY_LIFETIME: "forever" })).toContain("API_KEY_LIFETIME");
    expect(refusal({ NODE_ENV: "production" })).toContain("API_KEYS: NODE_ENV=production and no credentials");
  });

  it("names every bad variable at once, each once, though several services read it", () => {
    const message = refusal({ LOG_LEVEL: "loud", WEBHOOK_TIMEOUT: "10x", REPLICAS: "0" });
    for (const variable of ["LOG_LEVEL", "WEBHOOK_TIMEOUT", "REPLICAS"]) {
      expect(message.match(new RegExp(`^ {2}${variable}:`, "gm")), variable).toHaveLength(1);
    }
  });

  it("checks every service's NATS identity in NATS_CREDENTIALS, never printing a seed, and refuses it without NATS_URL", () => {
    const dir = mkdtempSync(join(tmpdir(), "nats-identities-"));
    try {
      const seed = new TextDecoder().decode(createUser().getSeed());
      writeFileSync(join(dir, "gateway.nk"), `${seed}\n`, { mode: 0o600 });
      writeFileSync(join(dir, "catalogue.nk"), "not a seed\n", { mode: 0o600 });
      const message = refusal({ NATS_URL: "nats://127.0.0.1:4222", NATS_CREDENTIALS: dir });
      expect(message).toContain(`NATS_CREDENTIALS: ${join(dir, "catalogue.nk")} holds no user nkey seed`);
      for (const service of ["ordering", "customer", "notification"])
        expect(message).toContain(`NATS_CREDENTIALS: cannot read ${join(dir, `${service}.nk`)} (ENOENT)`);
      expect(message).not.toContain("gateway.nk");
      expect(message).not.toContain(seed);
      expect(refusal({ NATS_CREDENTIALS: dir })).toContain("NATS_CREDENTIALS: set without NATS_URL");
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it("accepts the defaults and gives the launcher's own configuration", () => {
    expect(checkConfiguration({})).toMatchObject({ GATEWAY_PORT: 8080, REPLICAS: 1, LAUNCH_MODE: "auto" });
  });
});

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
