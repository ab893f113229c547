// The SQLite writer's wait for the write lock, as one rule: a group SQLite refused with
// SQLITE_BUSY is tried again until the busy timeout has passed since it was first tried.
//
// SQLite's busy timeout is no promise of a wait: where waiting could deadlock, or while another
// connection recovers the WAL, it refuses at once (its documentation of the busy handler says
// so). Two replicas writing one file under load were refused within a few hundred ms of a
// 5 s timeout, and their callers answered an error for a lock a moment's wait would have had.
// A refused BEGIN IMMEDIATE wrote nothing, so trying the group again is safe.
//
// Plain JavaScript, as the writer thread that imports it.

/** The pause before a group refused SQLITE_BUSY is tried again. */
export const BUSY_PAUSE_MS = 10;

/** @param {unknown} error */
export function isBusy(error) {
  const code = /** @type {{ code?: unknown } | undefined} */ (error)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}

/**
 * Runs `attempt` until it does not throw SQLITE_BUSY, or until `timeoutMs` have passed since the
 * first try: then the last refusal is thrown. Each try after the first is told how long is left
 * (`attempt(leftMs)`), so that SQLite's own wait inside it ends by then too.
 * @template T
 * @param {(leftMs: number) => T} attempt
 * @param {{ timeoutMs: number, now: () => number, pause: (ms: number) => void }} clock
 * @returns {T}
 */
export function untilNotBusy(attempt, { timeoutMs, now, pause }) {
  const deadline = now() + timeoutMs;
  let left = timeoutMs;
  for (;;) {
    try {
      return attempt(left);
    } catch (error) {
      left = deadline - now() - BUSY_PAUSE_MS;
      if (!isBusy(error) || left <= 0) throw error;
      pause(BUSY_PAUSE_MS);
    }
  }
}
