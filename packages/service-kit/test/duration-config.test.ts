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
  it("takes every server of a NATS cluster in NATS_URL, and the JetStream settings", () => {
    const config = loadConfig(schema, {
      NATS_URL: "nats://nats-1:4222,nats://nats-2:4222, nats://nats-3:4222",
      NATS_REPLICAS: "3",
      NATS_EVENTS_MAX_AGE: "72h",
      NATS_EVENTS_MAX_MB: "512",
    });
    expect(config).toMatchObject({
      NATS_REPLICAS: 3,
      NATS_EVENTS_MAX_AGE: 259_200_000,
      NATS_EVENTS_MAX_MB: 512,
    });
    expect(loadConfig(schema, {})).toMatchObject({
      NATS_REPLICAS: 1,
      NATS_EVENTS_MAX_AGE: 7 * 24 * 3_600_000,
      NATS_EVENTS_MAX_MB: 1024,
    });
  });
  it("refuses a replica count JetStream has no room for, a list with a bad URL, and an age under a minute", () => {
    for (const [name, value] of [
      ["NATS_REPLICAS", "0"],
      ["NATS_REPLICAS", "6"],
      ["NATS_REPLICAS", "three"],
      ["NATS_URL", "nats://nats-1:4222,nats-2"],
      ["NATS_EVENTS_MAX_AGE", "30s"],
      ["NATS_EVENTS_MAX_MB", "0"],
    ] as const) {
      expect(() => loadConfig(schema, { [name]: value }), `${name}=${value}`).toThrowError(
        expect.objectContaining({ message: expect.stringContaining(name) }),
      );
    }
  });
  it("takes a KurrentDB connection string as kurrentdb:// or esdb://, and nothing else", () => {
    for (const url of [
      "kurrentdb://admin:changeit@kurrentdb:2113?tls=true&tlsCAFile=/etc/cheese-store/ca/ca.crt",
      "kurrentdb+discover://kurrentdb-1:2113,kurrentdb-2:2113",
      "esdb://eventstore:2113?tls=false",
      "esdb+discover://eventstore:2113",
    ])
      expect(loadConfig(schema, { EVENTSTORE_URL: url }).EVENTSTORE_URL, url).toBe(url);
    for (const url of ["http://kurrentdb:2113", "kurrentdb:2113", "mongodb://kurrentdb:2113"])
      expect(() => loadConfig(schema, { EVENTSTORE_URL: url }), url).toThrowError(
        expect.objectContaining({
          message: expect.stringMatching(/EVENTSTORE_URL: .*kurrentdb:\/\/.*esdb:\/\//),
        }),
      );
  });
});
