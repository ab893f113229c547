import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { WebhookEventKind, WebhookSignatureAlgorithm } from "@cheese/contracts";
import { createSqliteEventStore, type EventStore } from "@cheese/event-store";
import { createMemoryReadModels } from "@cheese/read-models";
import {
  createLogger,
  handleCommand,
  IdAllocator,
  type Projection,
  startProjection,
} from "@cheese/service-kit";
import { ManualClock } from "@cheese/service-kit/testing";
import { tempDir } from "@cheese/testing";
import { afterEach } from "vitest";
import { webhookDecider, webhookStream } from "../src/domain/webhook.ts";
import type { NotificationDeps } from "../src/handlers/deps.ts";
import { deliveriesProjection } from "../src/projections/deliveries.ts";
import { startWebhooksProjection } from "../src/projections/webhooks.ts";
import type { SealedAuth } from "../src/security/receiver-auth.ts";
import { SecretBox } from "../src/security/secrets.ts";
import { WebhookSigningKeys } from "../src/security/signing-keys.ts";

export const t0 = "2026-03-01T10:00:00.000Z";
export const silentLogger = createLogger("notification", "silent");
/** What a handler is called with for one request. */
export const requestContext = { requestId: "r", correlationId: "c", logger: silentLogger };

/**
 * The notification service's stores for the handler tests of one `describe`: an SQLite event
 * store in a temporary folder, in-memory read models, secrets, and the service's projections
 * started over them on demand. All closed, and the folder removed, after each test.
 */
export function notificationStores(name: string) {
  const data = tempDir(name);
  const store = createSqliteEventStore({ file: join(data.path, "events.sqlite") });
  const readModels = createMemoryReadModels();
  const secrets = new SecretBox(randomBytes(32));
  const projections: Projection[] = [];
  /** The started webhooks projection's count of changes, or (none started) one that always moved. */
  let moved = 0;
  let webhookChanges = () => moved++;
  afterEach(async () => {
    for (const projection of projections) await projection.close();
    await store.close();
    data.remove();
  });
  const started = async (starting: Promise<Projection>): Promise<Projection> => {
    const projection = await starting;
    projections.push(projection);
    return projection;
  };
  return {
    store,
    readModels,
    secrets,
    /** The registered webhooks, projected by the function `main.ts` starts them with, counter included. */
    startWebhooks: async () => {
      const { projection, changes } = await startWebhooksProjection({
        eventStore: store,
        readModels,
        logger: silentLogger,
      });
      webhookChanges = changes;
      return started(Promise.resolve(projection));
    },
    /** `NotificationDeps.webhookChanges` of these stores. */
    webhookChanges: () => webhookChanges(),
    /** The history of every delivery, projected as `main.ts` projects it. */
    startDeliveries: () =>
      started(
        startProjection({
          ...deliveriesProjection,
          eventStore: store,
          readModels,
          logger: silentLogger,
        }),
      ),
  };
}

/**
 * The handlers' dependencies over `stores`: a manual clock at `t0`, one attempt per delivery, no
 * private receiver addresses, replays of 10 at most; a test names the projections and overrides
 * what it is about.
 */
export function notificationDeps(
  stores: {
    store: EventStore;
    readModels: NotificationDeps["readModels"];
    secrets: SecretBox;
    webhookChanges: () => number;
  },
  given: Pick<NotificationDeps, "webhooks" | "deliveries"> & Partial<NotificationDeps>,
): NotificationDeps {
  const { store, readModels, secrets, webhookChanges } = stores;
  const clock = given.clock ?? new ManualClock(t0);
  return {
    store,
    readModels,
    secrets,
    signingKeys: new WebhookSigningKeys(store, secrets, clock),
    webhookChanges,
    clock,
    webhookIds: new IdAllocator(store, "webhook"),
    deliveryIds: new IdAllocator(store, "delivery"),
    delays: [0],
    allowPrivateUrls: false,
    replayMax: 10,
    laneSettleMs: 0,
    wantKinds: async () => {},
    wakeScheduler: () => {},
    firstAttempt: () => undefined,
    ...given,
  };
}

/** Registers a webhook straight in the event store, as `POST /webhooks` records it. */
export async function registerWebhook(
  store: EventStore,
  secrets: SecretBox,
  registration: {
    webhookId: number;
    events: WebhookEventKind[];
    createdAt: string;
    url?: string;
    secret?: string;
    signatureAlgorithms?: WebhookSignatureAlgorithm[];
    filter?: string;
    ordered?: boolean;
    rateLimit?: { perSecond: number };
    auth?: SealedAuth;
  },
): Promise<void> {
  const {
    url = "https://hooks.example.com/",
    secret = "whsec_x",
    signatureAlgorithms = ["hmac-sha256"],
    ...rest
  } = registration;
  await handleCommand(store, webhookStream(registration.webhookId), webhookDecider, {
    type: "Register",
    registration: { ...rest, url, description: null, secret: secrets.seal(secret), signatureAlgorithms },
  });
}
