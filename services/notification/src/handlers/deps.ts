import type { EventStore } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import type { Clock, IdAllocator, Projection } from "@cheese/service-kit";
import type { RetryDelays } from "../domain/delivery.ts";
import type { Resolver } from "../security/address-policy.ts";
import type { SecretBox } from "../security/secrets.ts";

/** What the notification handlers work with, built once in `main.ts`. */
export interface NotificationDeps {
  store: EventStore;
  clock: Clock;
  readModels: ReadModelStore;
  /** Keeps `webhooks` and `deliveries` current; `catchUp()` gives read-your-writes. */
  projection: Projection;
  webhookIds: IdAllocator;
  deliveryIds: IdAllocator;
  secrets: SecretBox;
  delays: RetryDelays;
  allowPrivateUrls: boolean;
  /** Name resolution for the SSRF guard (tests); the system resolver by default. */
  resolve?: Resolver;
  /** Tells the local scheduler that deliveries were created, so attempt 1 goes out at once. */
  wakeScheduler: () => void;
}
