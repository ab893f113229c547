import type { Receiver } from "@cheese/testing/receiver";
import { expect } from "vitest";
import { json, type RunningSystem } from "./system.ts";

/**
 * Every event kind a registration may ask for: the spec's (docs/webhooks.md, "Event kinds") and
 * our `webhook.disabled`. Written out here, not imported from the contracts, so that the suites
 * check the served lists and documents against the kinds a user was promised.
 */
export const everyKind = [
  "order.placed",
  "order.confirmed",
  "order.shipped",
  "order.delivered",
  "order.cancelled",
  "cheese.new_arrival",
  "cheese.low_stock",
  "cheese.out_of_stock",
  "cheese.back_in_stock",
  "customer.created",
  "customer.updated",
  "customer.subscription_changed",
  "api_key.expiring",
  "webhook.test",
  "webhook.disabled",
];

/** What the webhook calls go to, asked at each call (the suites start it in `beforeAll`). */
export interface WebhookTarget {
  system: RunningSystem;
  receiver: Receiver;
  /** The operator's credentials a call carries unless it names others. */
  headers: Record<string, string>;
}

/**
 * An operator's calls to the system over HTTP (`body` sent as JSON when given), a webhook
 * registration pointing at a path of the local receiver (201 expected), and a test event sent to
 * a registration (202 expected; its delivery's id).
 */
export function webhookCalls(target: () => WebhookTarget) {
  const api = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = target().headers,
  ) =>
    fetch(`${target().system.baseUrl}${path}`, {
      method,
      headers: { ...headers, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  const register = async (path: string, events: string[] = ["webhook.test"]) => {
    const response = await api("POST", "/webhooks", { url: target().receiver.url(path), events });
    expect(response.status).toBe(201);
    return (await json(response)) as { id: number; secret: string };
  };
  const sendTest = async (webhookId: number) => {
    const response = await api("POST", `/webhooks/${webhookId}/test`);
    expect(response.status).toBe(202);
    return (await json(response)).deliveryId as number;
  };
  return { api, register, sendTest };
}
