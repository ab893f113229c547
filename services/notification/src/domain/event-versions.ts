import { defineEventVersions } from "@cheese/service-kit";
import type { Registration } from "./webhook.ts";

/**
 * The notification service's event shapes that changed (docs/architecture.md "Changing an event's
 * shape"): the store hands every event over in the latest shape.
 */
export const notificationEventVersions = defineEventVersions([
  {
    // 2: registrations choose their signatures; those written before signed with the HMAC only.
    type: "WebhookRegistered",
    version: 2,
    upcast: (data: Omit<Registration, "signatureAlgorithms">): Registration => ({
      ...data,
      signatureAlgorithms: ["hmac-sha256"],
    }),
  },
]);
