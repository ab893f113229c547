/**
 * @cheese/client: the Cheese Store API, typed from the OpenAPI document the gateway serves
 * (openapi-typescript), called through openapi-fetch, with what integrators need around it:
 * API-key, bearer and client-credentials auth, pagination, Idempotency-Key on writes, retries
 * of what is safe to repeat, and typed errors.
 *
 *   const cheese = createCheeseClient({
 *     baseUrl: "https://cheese.example.com",
 *     auth: { clientCredentials: { clientId, clientSecret } },
 *   });
 *   const created = await unwrap(cheese.POST("/cheeses", { body: { name: "Comté" } }));
 *   for await (const c of cheese.paginate("/cheeses", { query: { status: "available" } })) ...
 */
export type { Auth } from "./auth.ts";
export {
  type CheeseClient,
  type CheeseClientOptions,
  createCheeseClient,
  type ItemOf,
  type ListParams,
  type ListPath,
} from "./client.ts";
export { type ApiErrorBody, type ApiErrorType, CheeseApiError, unwrap } from "./errors.ts";
export type { components, operations, paths, webhooks } from "./generated/openapi.ts";

import type { components, webhooks } from "./generated/openapi.ts";

/** The schemas of the API by name: `Schemas["Cheese"]`, `Schemas["Order"]`, ... */
export type Schemas = components["schemas"];

/** The kinds of webhook event. */
export type WebhookEventType = keyof webhooks;

/** The body of a webhook delivery of one kind (or, without a kind, of any kind). */
export type WebhookEvent<K extends WebhookEventType = WebhookEventType> = K extends WebhookEventType
  ? webhooks[K]["post"] extends { requestBody?: { content: { "application/json": infer B } } }
    ? B
    : never
  : never;
