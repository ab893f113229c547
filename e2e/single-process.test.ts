import { dirname } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

describe.skipIf(launcherOnly("the one-process mode"))("pnpm start without nats-server on PATH", () => {
  let system: RunningSystem;
  beforeAll(async () => {
    // Only node's own directory on PATH: no nats-server can be found.
    system = await startSystem({ env: { PATH: dirname(process.execPath) } });
  });
  afterAll(async () => {
    await system?.stop();
  });

  it("says in its first line that it runs everything in one process", () => {
    const firstLine = system
      .output()
      .split("\n")
      .find((line) => line.includes('"service":"launcher"'));
    expect(JSON.parse(firstLine!).msg).toContain(
      "running all services in one process over the in-process bus",
    );
  });

  it("serves the same API", async () => {
    const auth = await operatorHeaders(system);
    const created = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth.bearer },
      body: JSON.stringify({ name: "Roquefort", category: { name: "Blue" }, pricePerKg: 38 }),
    });
    expect(created.status).toBe(201);
    const cheese = await json(created);
    const read = await fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
    expect(read.status).toBe(200);
    expect(await json(read)).toEqual(cheese);
  });
});
