import pRetry from "p-retry";

export interface AskAgainOptions {
  /** The pause between two asks, in ms (real time: the bus's own waits are not a business clock). */
  pauseMs: number;
  /** Whether a failure is worth asking again for; any other is thrown at once. */
  retryOn: (error: Error) => boolean;
  /** The most asks in all (default: no limit)... */
  tries?: number;
  /** ...and how long after the first ask a failure is still asked again for (default: no limit). */
  forMs?: number;
  /** Told of each failure that is asked again for (a log line). */
  onRetry?: (error: Error) => void;
}

/**
 * "Ask again until it answers", the one way the code waits for something that cannot answer yet
 * (a bucket's stream not listening yet, a stream without a leader, a relay's checkpoint on a
 * starting cluster, the first request of an Idempotency-Key): `ask`, asked again `pauseMs`
 * apart while it fails with what `retryOn` accepts, within `tries` asks and `forMs`; then its
 * last failure is thrown. A wait for a state rather than an answer fails with an error of its own
 * while the state is not there. p-retry, with a fixed pause.
 */
export function askAgain<T>(ask: () => Promise<T>, options: AskAgainOptions): Promise<T> {
  return pRetry(() => ask(), {
    retries: options.tries === undefined ? Number.POSITIVE_INFINITY : options.tries - 1,
    ...(options.forMs === undefined ? {} : { maxRetryTime: options.forMs }),
    minTimeout: options.pauseMs,
    factor: 1,
    randomize: false,
    shouldRetry: ({ error }) => {
      const again = options.retryOn(error);
      if (again) options.onRetry?.(error);
      return again;
    },
  });
}
