/**
 * The connection's state as the bus's loops wait on it (up, lost), and work given up at a drop.
 */
import { BusUnavailableError } from "../port.ts";
import { disconnected } from "./errors.ts";

/** A promise and the function that resolves it. */
export function signal(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** An already resolved {@link signal}. */
export function resolved(): { promise: Promise<void>; resolve: () => void } {
  const s = signal();
  s.resolve();
  return s;
}

/** The connection's state as a loop sending to JetStream waits on it (see `NatsBus.link`). */
export interface Link {
  whenUp(): Promise<void>;
  lost(): Promise<void>;
}

/**
 * `work`'s outcome, unless the connection drops first: then a {@link BusUnavailableError} at once.
 * A JetStream request in flight at a disconnect gets no reply (nats.js drops what it had not
 * sent, and the server that had it is gone) and would wait for its whole time-out.
 */
export function unlessLost<T>(work: Promise<T>, lost: Promise<void>, what: string): Promise<T> {
  work.catch(() => {}); // abandoned on a disconnect; its late failure is of no interest
  return Promise.race([
    work,
    lost.then(() => {
      throw disconnected(what);
    }),
  ]);
}
