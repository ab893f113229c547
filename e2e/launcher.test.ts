import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { processNodeOptions } from "@cheese/launcher/node-options";
import { acceptsConnections, processAlive } from "@cheese/testing";
import { Client } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operatorHeaders } from "./support/credentials.ts";
import { json, launcherOnly, type RunningSystem, startSystem } from "./support/system.ts";

type ServiceName = Parameters<typeof processNodeOptions>[0][number];

describe.skipIf(launcherOnly("the gateway balancer of REPLICAS=2"))("pnpm start with REPLICAS=2", () => {
  let system: RunningSystem;
  let stopped = false;
  beforeAll(async () => {
    // The default layout, whatever LAUNCH_MODE the run has (CI runs a pass with `separate`).
    system = await startSystem({ env: { REPLICAS: "2", LAUNCH_MODE: "auto" } });
  });
  afterAll(async () => {
    if (!stopped) await system?.stop();
  });

  it("runs two processes of every service, gateways behind one port", async () => {
    const pids = system.pids();
    for (const service of ["gateway", "catalogue", "ordering", "customer", "notification"]) {
      expect(pids[service], service).toHaveLength(2);
    }
    // Log lines reach the launcher's output up to 100 ms after they are logged.
    await expect.poll(() => system.output()).toMatch(/2 gateways on ports \d+, \d+ behind :\d+/);
  });

  it("runs every process with its services' V8 options, ordering, customer and notification in one", () => {
    const pids = system.pids();
    expect(pids.ordering).toHaveLength(2);
    expect(pids.customer).toEqual(pids.ordering);
    expect(pids.notification).toEqual(pids.ordering);
    expect(pids.catalogue?.some((pid) => pids.ordering?.includes(pid))).toBe(false);
    for (const [service, servicePids] of Object.entries(pids)) {
      for (const pid of servicePids) {
        const runs = readFileSync(`/proc/${pid}/environ`, "utf8")
          .split("\0")
          .find((variable) => variable.startsWith("SERVICE="))
          ?.slice("SERVICE=".length)
          .split(",") as ServiceName[];
        expect(runs, `pid ${pid}`).toContain(service);
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        expect(argv, `${service} (pid ${pid})`).toEqual(
          expect.arrayContaining(processNodeOptions(runs).split(" ")),
        );
      }
    }
  });

  it("runs its nats-server with its share of the machine's cores as GOMAXPROCS", () => {
    const { natsPid } = JSON.parse(readFileSync(join(system.dataDir, "run", "processes.json"), "utf8"));
    const goMaxProcs = readFileSync(`/proc/${natsPid}/environ`, "utf8")
      .split("\0")
      .find((variable) => variable.startsWith("GOMAXPROCS="));
    // The cores over the processes sharing them: nats-server, and two each of the gateway, the
    // catalogue and the process of ordering, customer and notification.
    expect(goMaxProcs).toBe(`GOMAXPROCS=${Math.max(1, Math.floor(availableParallelism() / 7))}`);
  });

  it("keeps serving through the balancer when one gateway process dies", async () => {
    const auth = await operatorHeaders(system);
    const created = await fetch(`${system.baseUrl}/cheeses`, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth.bearer },
      body: JSON.stringify({ name: "Tomme de Savoie", pricePerKg: 21 }),
    });
    expect(created.status).toBe(201);
    const cheese = await json(created);
    const [victim] = system.pids().gateway ?? [];
    process.kill(victim!, "SIGKILL");
    // Connections kept alive to the dead gateway are closed by the balancer. A GET it receives on
    // one as the gateway dies goes to the other gateway (load-balancer.ts); one sent on a
    // connection the balancer had already closed fails, as with any HTTP server closing a kept-
    // alive connection, and the next goes through on a new connection.
    const read = () => fetch(`${system.baseUrl}/cheeses/${cheese.id}`, { headers: auth.apiKey });
    await expect.poll(async () => (await read().catch(() => undefined))?.status).toBe(200);
    // Every new connection is served, by whichever gateway is up: the balancer passes the dead
    // one's turn (refused, or its restart) to the other. Each read has a connection of its own:
    // one kept alive from before the kill may still be closing (the race above), under load
    // after the poll's first 200.
    const { origin, pathname } = new URL(system.baseUrl);
    for (let i = 0; i < 10; i++) {
      const connection = new Client(origin);
      try {
        const read = await connection.request({
          method: "GET",
          path: `${pathname}/cheeses/${cheese.id}`,
          headers: auth.apiKey,
        });
        await read.body.dump();
        expect(read.statusCode).toBe(200);
      } finally {
        await connection.close();
      }
    }
  });

  it("stops every process it started, nats-server included, on SIGTERM", async () => {
    // The gateway killed above is restarted by the launcher: wait for all ten processes.
    await expect.poll(() => Object.values(system.pids()).flat().length, { timeout: 15_000 }).toBe(10);
    const pids = Object.values(system.pids()).flat();
    expect(pids).toHaveLength(10);
    const natsPort = Number(new URL(system.natsUrl()).port);
    expect(await acceptsConnections(natsPort)).toBe(true);
    await system.stop();
    stopped = true;
    for (const pid of pids) expect(processAlive(pid), `pid ${pid}`).toBe(false);
    expect(await acceptsConnections(natsPort)).toBe(false);
  });
});
