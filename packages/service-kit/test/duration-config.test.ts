import { describe, expect, it } from "vitest";
import { z } from "zod";
import { baseConfigShape, ConfigError, loadConfig } from "../src/config.ts";
import { parseDuration } from "../src/duration.ts";

describe("durations", () => {
  it("reads the units of WEBHOOK_RETRY_DELAYS and friends", () => {
    expect(parseDuration("0")).toBe(0);
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("10s")).toBe(10_000);
    expect(parseDuration("5m")).toBe(300_000);
    expect(parseDuration("2h")).toBe(7_200_000);
    expect(parseDuration("1.5s")).toBe(1500);
  });
  it("rejects what is not a duration", () => {
    for (const text of ["", "10", "5 minutes", "-1s", "1d", "s"])
      expect(parseDuration(text), text).toBeUndefined();
  });
});

describe("configuration", () => {
  const schema = z.object(baseConfigShape);
  it("applies defaults", () => {
    const config = loadConfig(schema, {});
    expect(config.DATA_DIR).toBe("./.data");
    expect(config.RPC_TIMEOUT).toBe(5000);
    expect(config.NATS_URL).toBeUndefined();
  });
  it("names every bad variable", () => {
    expect(() => loadConfig(schema, { NATS_URL: "not a url", RPC_TIMEOUT: "soon" })).toThrowError(
      expect.objectContaining({
        message: expect.stringMatching(/NATS_URL[\s\S]*RPC_TIMEOUT|RPC_TIMEOUT[\s\S]*NATS_URL/),
      }),
    );
  });
  it("treats an empty variable as unset", () => {
    expect(loadConfig(schema, { NATS_URL: "" }).NATS_URL).toBeUndefined();
  });
  it("wants S3 credentials with S3_ENDPOINT", () => {
    expect(() => loadConfig(schema, { S3_ENDPOINT: "http://127.0.0.1:9000" })).toThrow(ConfigError);
  });
});
