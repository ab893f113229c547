/**
 * A webhook receiver for the measurements, on a thread of its own: it accepts, reads and answers
 * each delivery on that thread's event loop and stamps its arrival there, so the load generator
 * placing orders on the main thread does not hold deliveries in the listening socket's queue
 * (with both on one event loop, up to 126 connections waited there to be accepted, and a
 * delivery's started→received p50 read 105 ms at 300 orders/s on the cluster).
 *
 * The thread runs `receiver-worker.mjs` (a `Receiver` of `@cheese/testing`) and posts each arrival
 * as `{ orderId, receivedAt }`.
 */
import { Worker } from "node:worker_threads";

/** A delivery as the receiver saw it: the order it is about, and when it arrived (epoch ms). */
export interface Arrival {
  orderId: string;
  receivedAt: number;
}

export interface ReceiverThread {
  url(path: string): string;
  /** Every arrival so far, in the order they arrived. */
  arrivals(): readonly Arrival[];
  close(): Promise<void>;
}

/** Starts a receiver on `host` in a thread of its own; resolves once it listens. */
export function startReceiverThread(host: string): Promise<ReceiverThread> {
  // No flags of this process (`--conditions=source`: the thread loads the built code, not tsx's).
  const worker = new Worker(new URL("./receiver-worker.mjs", import.meta.url), {
    workerData: { host },
    execArgv: [],
  });
  const arrivals: Arrival[] = [];
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.on("message", (message: { listening: string } | { arrived: Arrival[] }) => {
      if ("arrived" in message) {
        arrivals.push(...message.arrived);
        return;
      }
      const baseUrl = message.listening;
      resolve({
        url: (path) => `${baseUrl}${path}`,
        arrivals: () => arrivals,
        close: async () => {
          await worker.terminate();
        },
      });
    });
  });
}
