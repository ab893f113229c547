import { freeListenPort, listenPortRanges } from "@cheese/service-kit";

/** Test workers that may run at once, each with a slice of the tests' ports of its own. */
const SLICES = 16;

/**
 * A port for something a test starts (a system's gateway, a receiver): in the tests' half of
 * `listenPortRanges`, which no launcher picks from (its nats-server, its gateways behind the
 * balancer), and in this Vitest worker's own slice of it, so two workers never pick the same port
 * before either listens on it. Within a worker, `freeListenPort` does not hand a port out twice.
 */
export function testListenPort(): Promise<number> {
  const { tests } = listenPortRanges();
  const size = Math.floor((tests.high - tests.low) / SLICES);
  const slot = (Number(process.env.VITEST_POOL_ID ?? 1) - 1) % SLICES;
  const low = tests.low + slot * size;
  return freeListenPort("127.0.0.1", { within: { low, high: low + size } });
}
