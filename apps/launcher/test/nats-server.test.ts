import { describe, expect, it } from "vitest";
import { natsServerProcs } from "../src/nats-server.ts";

describe("the GOMAXPROCS of the launcher's nats-servers", () => {
  it("is their share of the cores: the cores over the processes sharing them, at least one", () => {
    expect(natsServerProcs(4, 2, {})).toBe("1");
    expect(natsServerProcs(13, 2, {})).toBe("1");
    expect(natsServerProcs(4, 16, {})).toBe("4");
    expect(natsServerProcs(3, 16, {})).toBe("5");
  });

  it("is the operator's where the environment sets one", () => {
    expect(natsServerProcs(4, 2, { GOMAXPROCS: "2" })).toBe("2");
  });
});
