import { performance } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";

/** How often the process looks whether it is idle. */
const CHECK_INTERVAL_MS = 1_000;
/**
 * Idle: the event loop was busy for less than this share of the last interval. An idle service's
 * timers, relays and heartbeats keep it at 0.1–1.5%, the seconds after start-up at up to 5%; at
 * this share a scavenge a second is noise, and a young generation regrown under light load costs
 * a few more scavenges a second of ~0.1 ms each.
 */
const IDLE_UTILIZATION = 0.1;
/** A young generation above this is worth giving back (V8 starts one at 1 MB). */
const SMALL_YOUNG_GENERATION_BYTES = 4 * 1024 * 1024;
/** At most one full collection this often; a scavenge otherwise. */
const FULL_COLLECTION_INTERVAL_MS = 60_000;

type Collection = (options: { type: "minor" | "major" }) => void;

/**
 * Gives V8's young generation, and the garbage a busy spell left in the old one, back to the
 * system once the process is idle.
 *
 * V8 grows the young generation (up to `--max-semi-space-size`, apps/launcher/src/node-options.ts)
 * while many objects survive a scavenge: start-up's module loading and catch-up, a burst of
 * requests. It shrinks it only at a collection that finds the allocation rate low, and an idle
 * process allocates too little to collect at all: the grown space stays resident, ~32 MB of a
 * service with 16, and so does what the burst promoted and no longer uses (docs/performance.md,
 * "Memory"). Each second the event loop was idle with a grown young generation, it collects: a
 * full collection (~100 ms with 100,000 cheeses in the read models) at most once a minute, so
 * that a process going busy and idle by turns does not pay it each time, else a scavenge (cheap:
 * it copies only the few live young objects). V8 shrinks the space to its initial size at the
 * first of these that finds the allocation rate of its last 5 s low: 5–7 s after the last work.
 * Under load the space grows again as before.
 *
 * Needs `--expose-gc` (each service's Node options carry it); without it (tests, `pnpm dev`) it
 * does nothing. Returns the function that stops it.
 */
export function releaseYoungGenerationWhenIdle(): () => void {
  const collect = (globalThis as { gc?: Collection }).gc;
  if (typeof collect !== "function") return () => {};
  let previous = performance.eventLoopUtilization();
  let lastFull = Number.NEGATIVE_INFINITY;
  const timer = setInterval(() => {
    const current = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(current, previous).utilization;
    previous = current;
    if (busy >= IDLE_UTILIZATION) return;
    const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
    if (!young || young.space_size <= SMALL_YOUNG_GENERATION_BYTES) return;
    const now = performance.now();
    const full = now - lastFull >= FULL_COLLECTION_INTERVAL_MS;
    if (full) lastFull = now;
    collect({ type: full ? "major" : "minor" });
  }, CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
