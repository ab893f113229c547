import { join } from "node:path";
import { notificationRpc } from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import {
  IdAllocator,
  type ServiceDefinition,
  type StartOptions,
  serviceDataDir,
  startProjection,
  startService,
} from "@cheese/service-kit";
import { type NotificationConfig, notificationConfigSchema } from "./config.ts";
import { DeliveryScheduler } from "./delivery/scheduler.ts";
import type { NotificationDeps } from "./handlers/deps.ts";
import { consumeIntegrationEvents } from "./handlers/integration-events.ts";
import {
  createWebhook,
  deleteWebhook,
  replayDeadLetters,
  sendTestEvent,
} from "./handlers/webhook-commands.ts";
import { getWebhook, listDeliveries, listWebhooks } from "./handlers/webhook-queries.ts";
import { projectDelivery } from "./projections/deliveries.ts";
import { projectWebhook } from "./projections/webhooks.ts";
import { loadSecretsKey, SecretBox } from "./security/secrets.ts";

/** How long past the receiver time-out an attempt may stay unrecorded before it counts as abandoned. */
const LEASE_GRACE_MS = 5000;

function project(event: RecordedEvent, readModels: ReadModelStore): Promise<void> {
  return event.streamName.startsWith("webhook-")
    ? projectWebhook(event, readModels)
    : projectDelivery(event, readModels);
}

/**
 * The notification service: webhook registrations, the fan-out of integration events into
 * webhook events, and their signed, retried delivery (docs/webhooks.md).
 */
export const notificationService: ServiceDefinition<NotificationConfig> = {
  name: "notification",
  configSchema: notificationConfigSchema,
  needs: { eventStore: true, readModels: true },
  async start(ctx) {
    const { eventStore: store, readModels, logger, config } = ctx;
    const secrets = new SecretBox(
      config.WEBHOOK_SECRETS_KEY ??
        loadSecretsKey(join(serviceDataDir(config, "notification"), "webhook-secrets.key")),
    );
    const projection = await startProjection({
      name: "webhooks",
      eventStore: store,
      readModels,
      categories: ["webhook", "delivery"],
      apply: project,
      logger,
    });
    ctx.onStop(projection);
    await projection.ready;

    const scheduler = new DeliveryScheduler({
      store,
      secrets,
      delays: config.WEBHOOK_RETRY_DELAYS,
      timeoutMs: config.WEBHOOK_TIMEOUT,
      leaseMs: config.WEBHOOK_TIMEOUT + LEASE_GRACE_MS,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      maxInFlightPerWebhook: config.WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK,
      maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
      clock: ctx.clock,
      logger,
    });
    scheduler.start();
    ctx.onStop(scheduler);
    await scheduler.ready;

    const deps: NotificationDeps = {
      store,
      clock: ctx.clock,
      readModels,
      projection,
      webhookIds: new IdAllocator(store, "webhook"),
      deliveryIds: new IdAllocator(store, "delivery"),
      secrets,
      delays: config.WEBHOOK_RETRY_DELAYS,
      allowPrivateUrls: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      wakeScheduler: () => scheduler.wake(),
    };
    ctx.onStop(consumeIntegrationEvents(ctx.bus, deps, logger));

    ctx.serve(notificationRpc.createWebhook, (request, context) => createWebhook(deps, request, context));
    ctx.serve(notificationRpc.listWebhooks, (page) => listWebhooks(deps, page));
    ctx.serve(notificationRpc.getWebhook, ({ webhookId }) => getWebhook(deps, webhookId));
    ctx.serve(notificationRpc.deleteWebhook, ({ webhookId }, context) =>
      deleteWebhook(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.listDeliveries, (request) => listDeliveries(deps, request));
    ctx.serve(notificationRpc.sendTestEvent, ({ webhookId }, context) =>
      sendTestEvent(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.replayDeadLetters, ({ webhookId }, context) =>
      replayDeadLetters(deps, webhookId, context),
    );
  },
};

export const start = (options?: StartOptions) => startService(notificationService, options);
