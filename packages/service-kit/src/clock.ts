/**
 * Time, injected. Every decision that depends on the time (timestamps, expiry, delays, who may
 * take over from whom) reads this clock, never `Date.now()`, so a test moves time forward with
 * `ManualClock.advance` (`@cheese/service-kit/testing`) instead of sleeping. Timeouts of
 * infrastructure (RPC deadlines, reconnect back-off) stay on real time.
 */
export interface Clock {
  now(): Date;
  /** Calls `callback` once, `ms` from now by this clock. */
  setTimeout(callback: () => void, ms: number): Timer;
  /** Calls `callback` every `ms` by this clock. */
  setInterval(callback: () => void, ms: number): Timer;
}

export interface Timer {
  cancel(): void;
}

/** setTimeout's own limit (about 24.8 days); longer waits are made of several. */
const MAX_TIMER_MS = 2_147_483_647;

/** The computer's clock. Its timers never keep a process alive on their own. */
export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout(callback, ms) {
    const due = Date.now() + Math.max(0, ms);
    let timer: NodeJS.Timeout;
    const arm = () => {
      timer = setTimeout(
        () => (Date.now() >= due ? callback() : arm()),
        Math.min(Math.max(0, due - Date.now()), MAX_TIMER_MS),
      );
      timer.unref();
    };
    arm();
    return { cancel: () => clearTimeout(timer) };
  },
  setInterval(callback, ms) {
    const timer = setInterval(callback, ms);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
};

/** The clock's time as an ISO 8601 string, as events record it. */
export const isoNow = (clock: Clock): string => clock.now().toISOString();
