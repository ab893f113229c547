import { type Timer, unavailable } from "@cheese/service-kit";
import type { NotificationDeps } from "./deps.ts";

/** How long a query waits for a delivery history still being rebuilt before answering 503. */
export const LOADING_WAIT_MS = 3000;

/**
 * Waits until the `deliveries` read model holds every delivery. With in-memory read models and no
 * snapshot of this version or the previous one (a first start), it is built in the background
 * after start (a long history takes a while); until then a query answers 503 with Retry-After
 * rather than an incomplete list. A rebuild beside a live one (a version change, `pnpm rebuild`)
 * never gets here: the live one answers meanwhile.
 */
export async function deliveryHistory(deps: NotificationDeps): Promise<void> {
  let timer: Timer | undefined;
  const loaded = await Promise.race([
    deps.deliveries.ready.then(() => true),
    new Promise<false>((resolve) => {
      timer = deps.clock.setTimeout(() => resolve(false), LOADING_WAIT_MS);
    }),
  ]);
  timer?.cancel();
  if (!loaded) {
    throw unavailable("the delivery history is still loading; retry shortly");
  }
  await deps.deliveries.catchUp();
}
