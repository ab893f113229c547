// The thread of a `startReceiverThread` receiver (receiver-thread.ts): a `Receiver` on
// `workerData.host` that posts its arrivals to the main thread every 50 ms, each stamped when it
// arrived, so the posting's pace changes no time measured.
//
// Plain JavaScript, loading the built `@cheese/testing` (`pnpm bench` builds first): a worker
// thread does not inherit tsx's loader.
import { parentPort, workerData } from "node:worker_threads";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";

const port = parentPort;
if (!port) throw new Error("receiver-worker.mjs runs as a worker thread (startReceiverThread)");

const receiver = await Receiver.start(/** @type {{ host: string }} */ (workerData).host);
let posted = 0;
/** Posts what arrived since the last post. */
const post = () => {
  const requests = receiver.requests();
  /** @type {{ orderId: string, receivedAt: number }[]} */
  const arrived = [];
  for (; posted < requests.length; posted++) {
    const request = requests[posted];
    arrived.push({ orderId: String(envelopeOf(request).data.order_id), receivedAt: request.receivedAt });
  }
  if (arrived.length > 0) port.postMessage({ arrived });
};
setInterval(post, 50);
port.postMessage({ listening: receiver.url("") });
