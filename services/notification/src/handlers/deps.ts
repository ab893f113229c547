import type { WebhookEventKind } from "@cheese/contracts";
import type { EventMetadata, EventStore } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import type { Clock, IdAllocator, Projection } from "@cheese/service-kit";
import type { DeliveryState, RetryDelays } from "../domain/delivery.ts";
import type { Resolver } from "../security/address-policy.ts";
import type { SecretBox } from "../security/secrets.ts";
import type { WebhookSigningKeys } from "../security/signing-keys.ts";

/** What the notification handlers work with, built once in `main.ts`. */
export interface NotificationDeps {
  store: EventStore;
  clock: Clock;
  readModels: ReadModelStore;
  /** Keeps `webhooks` current; `catchUp()` gives read-your-writes. Ready before requests are served. */
  webhooks: Projection;
  /**
   * How many webhook events the `webhooks` projection has applied in this process: while it
   * stays the same, the subscribers of a kind found before are still the subscribers, and a
   * fan-out need not look them up again (`startWebhooksProjection` counts them).
   */
  webhookChanges: () => number;
  /**
   * Keeps `deliveries` (the history of every delivery) current. With in-memory read models it is
   * rebuilt in the background after start; queries of it wait for it (see `deliveryHistory`).
   */
  deliveries: Projection;
  webhookIds: IdAllocator;
  deliveryIds: IdAllocator;
  secrets: SecretBox;
  /** The system's Ed25519 keys for v1a signatures (created at start when absent). */
  signingKeys: WebhookSigningKeys;
  delays: RetryDelays;
  allowPrivateUrls: boolean;
  /** Most deliveries one replay call may start again. */
  replayMax: number;
  /** The least wait, after its event's publication, before a delivery of an ordered lane is attempted. */
  laneSettleMs: number;
  /** Name resolution for the SSRF guard (tests); the system resolver by default. */
  resolve?: Resolver;
  /**
   * Resolves once the events that may become these kinds are consumed (`WebhookSources.want`):
   * awaited before a registration wanting them is recorded.
   */
  wantKinds: (kinds: readonly WebhookEventKind[]) => Promise<void>;
  /**
   * Tells the local scheduler that deliveries were created or released, so they go out at once;
   * `created`: the deliveries this process created, which its scheduler prefers to others'.
   */
  wakeScheduler: (created?: Iterable<number>) => void;
  /**
   * The local scheduler takes the first attempt of a delivery about to be created, holding a
   * slot of its registration: the append that creates it claims the attempt too (`Create`'s
   * `startAt`), and the fan-out tells the handle what it wrote. Undefined when the attempt cannot
   * go at once (`DeliveryScheduler.firstAttempt`).
   */
  firstAttempt: (deliveryId: number, webhookId: number, metadata: EventMetadata) => FirstAttempt | undefined;
}

/** The first attempt of a delivery being created, taken by the local scheduler. */
export interface FirstAttempt {
  /** The claim's time: `Create`'s `startAt`. */
  startAt: string;
  /** The append created the delivery: its state and revision after it (attempting once claimed). */
  claimed(state: DeliveryState, revision: number): void;
  /** The append did not create it, or failed: the slot is given back. */
  unclaimed(): void;
}
