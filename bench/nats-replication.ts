/**
 * `pnpm bench:nats-replication`: what three nats-servers spend per integration event on
 * JetStream replicas 3, with no durable taking the events and with one taking them as a
 * service's does (`bus.consume`: a pull consumer, explicit acks, 64 in flight). Each side on a
 * cluster of its own (`startNatsCluster`, loopback), the publisher and the consumer each
 * connected to another node; the events published at a fixed rate (`--rate`, 300 a second, for
 * `--seconds`, 10), each awaited until stored and, with the durable, handled and acked. Prints
 * the servers' CPU and messages per event (`/varz`, `/routez`), the figures `pnpm bench
 * --cluster` shows per order beside the services' own.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { connectNatsBus, type MessageBus } from "@cheese/messaging";
import { startNatsCluster } from "@cheese/testing";
import { type NatsTraffic, readNatsTraffic, trafficPerUnit } from "./harness/nats-traffic.ts";
import { processUsage, underPid } from "./harness/system.ts";

const { values } = parseArgs({
  options: { rate: { type: "string", default: "300" }, seconds: { type: "string", default: "10" } },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const SUBJECT = "events.bench.happened";
/** About an order event's size (`order.placed`, ~600 bytes as delivered). */
const payload = { order: "x".repeat(500) };

const serversCpuMs = () => processUsage(underPid(process.pid)).byProcess["nats-server"]?.cpuMs ?? 0;

async function run(withDurable: boolean): Promise<string> {
  const cluster = await startNatsCluster(3);
  const buses: MessageBus[] = [];
  try {
    const connect = async (name: string, url: string) => {
      const bus = await connectNatsBus({ url, name, replicas: 3 });
      buses.push(bus);
      return bus;
    };
    const publisher = await connect("publisher", cluster.nodes[0]!.url);
    let handled = 0;
    if (withDurable) {
      const consumer = await connect("consumer", cluster.nodes[1]!.url);
      await consumer
        .consume({
          durable: "bench",
          subjects: [SUBJECT],
          maxInFlight: 64,
          handler: async () => void handled++,
        })
        .ready();
    }
    const publish = () => publisher.publish({ id: randomUUID(), subject: SUBJECT, payload });
    const allHandled = async (count: number) => {
      while (withDurable && handled < count) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    // Warm-up: the stream's and the durable's groups have leaders and have settled.
    await Promise.all(Array.from({ length: 200 }, publish));
    await allHandled(200);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const monitors = cluster.nodes.map((node) => node.monitorUrl);
    const trafficBefore: NatsTraffic = await readNatsTraffic(monitors);
    const cpuBefore = serversCpuMs();
    const count = rate * seconds;
    const start = performance.now();
    const published: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const wait = start + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      published.push(publish());
    }
    await Promise.all(published);
    await allHandled(200 + count);
    const cpu = serversCpuMs() - cpuBefore;
    const trafficAfter = await readNatsTraffic(monitors);
    const took = ((performance.now() - start) / 1000).toFixed(1);
    return [
      `${withDurable ? "one durable" : "no durable "} (${took} s): the three servers ${(cpu / count).toFixed(3)} ms of CPU per event`,
      `messages per event: ${trafficPerUnit(trafficBefore, trafficAfter, count)}`,
    ].join("; ");
  } finally {
    await Promise.allSettled(buses.map((bus) => bus.close()));
    await cluster.stop();
  }
}

console.log(`${rate} events/s for ${seconds} s, JetStream replicas 3, three nats-servers on loopback:`);
// Alternating, twice each, so that the machine's drift falls on both.
for (const withDurable of [false, true, false, true]) console.log(await run(withDurable));
