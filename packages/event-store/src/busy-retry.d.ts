// Types of busy-retry.js (plain JavaScript, as the writer thread that imports it).
export declare const BUSY_PAUSE_MS: number;
export declare function isBusy(error: unknown): boolean;
export declare function untilNotBusy<T>(
  attempt: (leftMs: number) => T,
  clock: { timeoutMs: number; now: () => number; pause: (ms: number) => void },
): T;
