import { randomUUID } from "node:crypto";
import { connectNatsBus, type MessageBus } from "@cheese/messaging";
import { type NatsClusterHandle, startNatsCluster } from "@cheese/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NatsTraffic, readNatsTraffic, trafficPerUnit } from "../harness/nats-traffic.ts";

/**
 * A reading taken once the servers are quiet, two in a row alike: each server's counters are
 * read one endpoint after another, so a reading taken while the last append still travels to its
 * third replica can count it over a route and not yet into the server (or the other way round).
 */
async function quietReading(monitors: readonly string[]): Promise<NatsTraffic> {
  let last = await readNatsTraffic(monitors);
  await expect
    .poll(
      async () => {
        const next = await readNatsTraffic(monitors);
        const alike = next.servers.in === last.servers.in && next.servers.routesIn === last.servers.routesIn;
        last = next;
        return alike;
      },
      { interval: 100, timeout: 15_000 },
    )
    .toBe(true);
  return last;
}

/** The cluster bench's `NATS messages per …` figures, read from three real servers. */
describe("the nats-servers' traffic per unit", () => {
  let cluster: NatsClusterHandle;
  let bus: MessageBus;
  beforeAll(async () => {
    cluster = await startNatsCluster(3);
    bus = await connectNatsBus({ url: cluster.nodes[0]!.url, name: "publisher", replicas: 3 });
  }, 60_000);
  afterAll(async () => {
    await bus?.close();
    await cluster?.stop();
  });

  it("counts what each client sent and received and what each stream stored, per event", async () => {
    const publish = () => bus.publish({ id: randomUUID(), subject: "events.test.happened", payload: {} });
    await publish(); // the stream exists and has a leader
    const monitors = cluster.nodes.map((node) => node.monitorUrl);
    const before = await quietReading(monitors);
    for (let i = 0; i < 20; i++) await publish();
    const after = await quietReading(monitors);

    const words = trafficPerUnit(before, after, 20);
    // Each publish is one message from the client and one ack back; the stream stored each once.
    expect(words).toContain("publisher 1.00 / 1.00");
    expect(words).toContain("stored: EVENTS 1.00");
    // Replicas 3: the append reaches the other servers over the routes.
    const [, serversIn, routesIn] = /servers in ([\d.]+) \(routes ([\d.]+)\)/.exec(words) ?? [];
    expect(Number(routesIn)).toBeGreaterThan(1);
    expect(Number(serversIn)).toBeGreaterThan(Number(routesIn));
  }, 60_000);
});
