import { join } from "node:path";
import { notificationRpc } from "@cheese/contracts";
import { SharedBuckets } from "@cheese/rate-limits";
import {
  IdAllocator,
  type ServiceDefinition,
  type StartOptions,
  serveRebuildRequests,
  serviceDataDir,
  startProjection,
  startService,
} from "@cheese/service-kit";
import { type NotificationConfig, notificationConfigSchema } from "./config.ts";
import { DeliveryScheduler } from "./delivery/scheduler.ts";
import { blobSnapshotStore } from "./delivery/snapshot.ts";
import { WEBHOOK_THROTTLE } from "./delivery/throttle-gate.ts";
import { notificationEventVersions } from "./domain/event-versions.ts";
import { deleteDeadLetter, listDeadLetters, replayDeadLetter } from "./handlers/dead-letters.ts";
import type { NotificationDeps } from "./handlers/deps.ts";
import { sendDisabledNotice } from "./handlers/disabled-notice.ts";
import { previewFilter } from "./handlers/filter-preview.ts";
import { SOURCES_READY_TIMEOUT_MS, WebhookSources } from "./handlers/integration-events.ts";
import { observeDeadLetters } from "./handlers/metrics.ts";
import {
  createWebhook,
  deleteWebhook,
  pauseWebhook,
  replayDeliveries,
  resendDelivery,
  resumeWebhook,
  rotateSecret,
  rotateSigningKey,
  sendTestEvent,
  updateWebhook,
} from "./handlers/webhook-commands.ts";
import { getDelivery, getWebhook, listDeliveries, listWebhooks } from "./handlers/webhook-queries.ts";
import { deliveriesProjection } from "./projections/deliveries.ts";
import { startWebhooksProjection } from "./projections/webhooks.ts";
import { loadSecretsKey, SecretBox } from "./security/secrets.ts";
import { WebhookSigningKeys } from "./security/signing-keys.ts";

/** How long past the receiver time-out an attempt may stay unrecorded before it counts as abandoned. */
const LEASE_GRACE_MS = 5000;

/**
 * The notification service: webhook registrations, the fan-out of integration events into
 * webhook events, and their signed, retried delivery (docs/webhooks.md).
 */
export const notificationService: ServiceDefinition<NotificationConfig, NotificationDeps> = {
  name: "notification",
  configSchema: notificationConfigSchema,
  needs: { eventStore: true, readModels: true, blobs: true },
  eventVersions: notificationEventVersions,
  // The wiring of the service, production's and the tests' alike (startService runs it; what
  // it returns is `RunningService.wired`): projections, consumers, handlers' deps, RPCs.
  async start(ctx) {
    const { eventStore: store, readModels, logger, config } = ctx;
    const { clock } = ctx;
    const secrets = new SecretBox(
      config.WEBHOOK_SECRETS_KEY ??
        loadSecretsKey(join(serviceDataDir(config, "notification"), "webhook-secrets.key")),
    );
    const signingKeys = new WebhookSigningKeys(store, secrets, clock);
    await signingKeys.ensure();
    // The sources wanted by registrations recorded on any replica are consumed here too.
    let sources: WebhookSources | undefined;
    const { projection: webhooks, changes: webhookChanges } = await startWebhooksProjection({
      eventStore: store,
      readModels,
      logger,
      onKinds: (kinds) =>
        void sources
          ?.want(kinds)
          .catch((err) => logger.error({ err, kinds }, "could not consume the events of these kinds")),
    });
    ctx.onStop(webhooks);
    // The delivery history may be long: requests are served before it is loaded (its queries
    // wait for it), so start-up costs only the registrations and the schedule's snapshot.
    const deliveries = await startProjection({
      ...deliveriesProjection,
      eventStore: store,
      readModels,
      logger,
    });
    ctx.onStop(deliveries);
    ctx.onStop(serveRebuildRequests(ctx.bus, "notification", { webhooks, deliveries }, logger));
    ctx.onStop(observeDeadLetters(readModels));
    await webhooks.ready;

    const deps: NotificationDeps = {
      store,
      readModels,
      webhooks,
      webhookChanges,
      deliveries,
      webhookIds: new IdAllocator(store, "webhook"),
      // Ten registrations make ten deliveries per event: blocks of 500 keep a block's append and
      // read to one per fifty events (a stop skips the rest of its block; ids are never reused).
      deliveryIds: new IdAllocator(store, "delivery", 500),
      secrets,
      signingKeys,
      delays: config.WEBHOOK_RETRY_DELAYS,
      allowPrivateUrls: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      replayMax: config.WEBHOOK_REPLAY_MAX,
      laneSettleMs: config.WEBHOOK_LANE_SETTLE,
      clock,
      wantKinds: (kinds) => webhookSources.wantNew(kinds, SOURCES_READY_TIMEOUT_MS),
      wakeScheduler: (created) => scheduler.wake(created),
      firstAttempt: (deliveryId, webhookId, metadata) =>
        scheduler.firstAttempt(deliveryId, webhookId, metadata),
    };
    const webhookSources = new WebhookSources(ctx.bus, deps, logger);
    const scheduler = new DeliveryScheduler({
      store,
      secrets,
      signingKeys,
      delays: config.WEBHOOK_RETRY_DELAYS,
      timeoutMs: config.WEBHOOK_TIMEOUT,
      leaseMs: config.WEBHOOK_TIMEOUT + LEASE_GRACE_MS,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      maxInFlightPerWebhook: config.WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK,
      maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
      disableAfterMs: config.WEBHOOK_DISABLE_AFTER,
      retryAfterMaxMs: config.WEBHOOK_RETRY_AFTER_MAX,
      throttle: new SharedBuckets(ctx.bus, logger, clock, WEBHOOK_THROTTLE),
      snapshots: blobSnapshotStore(ctx.blobs),
      snapshotEveryMs: config.WEBHOOK_SNAPSHOT_INTERVAL,
      onWebhookDisabled: sendDisabledNotice(deps, logger),
      clock,
      logger,
    });
    scheduler.start();
    ctx.onStop(scheduler);
    await scheduler.ready;

    ctx.onStop(webhookSources);
    sources = webhookSources;
    await webhookSources.start();

    ctx.serve(notificationRpc.createWebhook, deps, createWebhook);
    ctx.serve(notificationRpc.listWebhooks, deps, listWebhooks);
    ctx.serve(notificationRpc.getWebhook, ({ webhookId }) => getWebhook(deps, webhookId));
    ctx.serve(notificationRpc.updateWebhook, deps, updateWebhook);
    ctx.serve(notificationRpc.pauseWebhook, ({ webhookId }, context) =>
      pauseWebhook(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.resumeWebhook, ({ webhookId }, context) =>
      resumeWebhook(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.rotateSecret, deps, rotateSecret);
    ctx.serve(notificationRpc.deleteWebhook, ({ webhookId }, context) =>
      deleteWebhook(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.listDeliveries, deps, listDeliveries);
    ctx.serve(notificationRpc.getDelivery, deps, getDelivery);
    ctx.serve(notificationRpc.resendDelivery, deps, resendDelivery);
    ctx.serve(notificationRpc.sendTestEvent, ({ webhookId }, context) =>
      sendTestEvent(deps, webhookId, context),
    );
    ctx.serve(notificationRpc.replayDeliveries, (request, context) =>
      replayDeliveries(deps, request, context),
    );
    ctx.serve(notificationRpc.previewFilter, deps, previewFilter);
    ctx.serve(notificationRpc.signingKeys, () => signingKeys.keySet());
    ctx.serve(notificationRpc.rotateSigningKey, (request, context) =>
      rotateSigningKey(deps, request, context),
    );
    const letters = ctx.bus.deadLetters();
    ctx.serve(notificationRpc.listDeadLetters, (request) => listDeadLetters(letters, request));
    ctx.serve(notificationRpc.replayDeadLetter, ({ id }) => replayDeadLetter(letters, id));
    ctx.serve(notificationRpc.deleteDeadLetter, ({ id }) => deleteDeadLetter(letters, id));
    return deps;
  },
};

export const start = (options?: StartOptions) => startService(notificationService, options);
