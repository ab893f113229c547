import { performance } from "node:perf_hooks";
import { getHeapSpaceStatistics } from "node:v8";

/** How often the process looks whether it is idle. */
const CHECK_INTERVAL_MS = 1_000;
/** Idle: the event loop was busy for less than this share of the last interval. */
const IDLE_UTILIZATION = 0.02;
/** A young generation above this is worth giving back (V8 starts one at 1 MB). */
const SMALL_YOUNG_GENERATION_BYTES = 4 * 1024 * 1024;

type MinorCollection = (options: { type: "minor" }) => void;

/**
 * Gives V8's young generation back to the system once the process is idle.
 *
 * V8 grows the young generation (up to `--max-semi-space-size`, apps/launcher/src/node-options.ts)
 * while many objects survive a scavenge: start-up's module loading and catch-up, a burst of
 * requests. It shrinks it only at a collection that finds the allocation rate low, and an idle
 * process allocates too little to collect at all: the grown space stays resident, ~32 MB of a
 * service with 16 (docs/performance.md, "Memory"). Once the event loop has been idle for a second,
 * one scavenge (cheap: it copies only the few live young objects) lets V8 shrink the space to its
 * initial size; under load it grows again as before.
 *
 * Needs `--expose-gc` (each service's Node options carry it); without it (tests, `pnpm dev`) it
 * does nothing. Returns the function that stops it.
 */
export function releaseYoungGenerationWhenIdle(): () => void {
  const collect = (globalThis as { gc?: MinorCollection }).gc;
  if (typeof collect !== "function") return () => {};
  let previous = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const current = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(current, previous).utilization;
    previous = current;
    if (busy >= IDLE_UTILIZATION) return;
    const young = getHeapSpaceStatistics().find((space) => space.space_name === "new_space");
    if (young && young.space_size > SMALL_YOUNG_GENERATION_BYTES) collect({ type: "minor" });
  }, CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
