/**
 * What the OpenAPI document says of each operation: its summary and description, by operationId,
 * beside its examples (`operationExamples`). The gateway declares each route (method, path,
 * schemas, access, handler) and puts this text on its operation when it registers it; an
 * operationId without its text here does not type-check.
 */
interface OperationText {
  summary: string;
  description: string;
}

/** The start of every history's description: the page of changes all three answer. */
const history =
  "Every change, oldest first, as {type, at, data}: `type` names the change, `at` is when it was recorded, " +
  "`data` holds its public facts. Pages follow the convention of every list (limit 1 to 100, default 20; " +
  "pass nextCursor as cursor).";

/** Shipping and delivering share their rule. */
const fulfilment =
  "Operators only: an operator API key, or an operator client's client-credentials token with write:orders. " +
  "Any other move is 409.";

const webhookSigningKeys =
  "The JWK set (OKP, Ed25519) of the system's webhook signing key: the v1a signatures in webhook-signature verify " +
  "with it alone. During a key rotation's overlap it holds both keys, the new one first.";

export const operationText = {
  // Cheeses
  addCheese: {
    summary: "Add a cheese",
    description: "The name must be unique within its category.",
  },
  updateCheese: {
    summary: "Replace a cheese",
    description: "The id must match an existing cheese; omitted optional fields are reset.",
  },
  listCheeses: {
    summary: "List cheeses (paginated)",
    description:
      "Keyset pagination: nextCursor stays valid while cheeses are added or removed. A request with a cursor may leave out sort and filters (the cursor's apply); stating different ones is 400.",
  },
  findCheesesByStatus: {
    summary: "Find cheeses by status",
    description:
      "Every cheese with any of the statuses given (comma separated), as one unpaginated array; an unknown status is 400.",
  },
  findCheesesByTags: {
    summary: "Find cheeses by tags",
    description: "Deprecated: use GET /cheeses with the tags query parameter.",
  },
  uploadImage: {
    summary: "Upload an image of a cheese",
    description:
      "The format is decided from the file's bytes. The original and a 256-pixel WebP thumbnail are stored; the image URL joins photoUrls (first when isPrimary).",
  },
  listCheeseImages: {
    summary: "The images of a cheese, with caption and primary flag (beyond the spec)",
    description:
      "Every image uploaded for the cheese, oldest first, with its size, dimensions, caption and whether it is the primary one.",
  },
  getImage: {
    summary: "The bytes of an uploaded image or thumbnail (the URLs upload results give)",
    description:
      "Public, so the photoUrls of a cheese work in an <img> tag. Image names are never reused, so the answer may be cached for good; If-None-Match with the ETag answers 304.",
  },
  getCheeseById: {
    summary: "Find a cheese by id",
    description:
      "The cheese with its ETag (its revision): send it back in If-None-Match to get 304 when unchanged, or in If-Match on a write to refuse it when someone changed the cheese meanwhile. With asOf, the cheese as it was at that moment (its events up to then), with the ETag of the revision it was at and X-Cheese-As-Of, when the last of those events was recorded; 404 when it did not exist yet or was already deleted.",
  },
  updateCheeseWithForm: {
    summary: "Update a cheese partially",
    description:
      "Only provided fields are updated: name and status as query parameters, and any CheeseInput field in an optional JSON body, merged (the query parameters win).",
  },
  deleteCheese: {
    summary: "Delete a cheese",
    description:
      "Permanent removal, cannot be undone. Placed orders for the cheese are cancelled; approved or shipped ones make it 409.",
  },
  getCheeseHistory: {
    summary: "What happened to a cheese, and when",
    description: `${history} A deleted cheese's history stays readable and ends with cheese.deleted.`,
  },

  // Store
  getInventory: {
    summary: "Count of cheeses per status",
    description:
      "How many cheeses of the catalogue have each status; every status is present, with 0 when none has it.",
  },
  placeOrder: {
    summary: "Place an order for cheeses",
    description:
      "Every line's cheese must exist, be available and have a price. Prices are fixed now; the order is then checked again asynchronously and moves to approved or cancelled. Send an Idempotency-Key to make retries safe.",
  },
  getOrderById: {
    summary: "Find an order by id",
    description:
      "A customer sees only its own orders; someone else's order is 404. With asOf, the order as it was at that moment (its events up to then), for whoever may read it now, its shipping address and notes as they read today (redacted once the customer is erased), with X-Cheese-As-Of, when the last of those events was recorded; 404 when it did not exist yet.",
  },
  deleteOrder: {
    summary: "Cancel an order",
    description:
      "placed or approved: cancelled (204); already cancelled: 204 again; shipped or delivered: 409.",
  },
  listOrders: {
    summary: "List the caller's orders (paginated, newest first)",
    description: "A customer gets its own orders; an operator gets every order.",
  },
  shipOrder: {
    summary: "Mark an approved order shipped",
    description: fulfilment,
  },
  deliverOrder: {
    summary: "Mark a shipped order delivered",
    description: fulfilment,
  },
  getOrderHistory: {
    summary: "What happened to an order, and when (its customer or an operator)",
    description: `${history} Never the shipping address or the notes. Someone else's order is 404.`,
  },

  // Customers
  createCustomer: {
    summary: "Register an account",
    description: "Username and email must be unique (case-insensitively). Public.",
  },
  createCustomersWithArray: {
    summary: "Register up to 100 accounts",
    description:
      "Each element is validated and registered on its own, in order: partial success is possible, and a duplicate of an earlier element fails with its index. Public. Each element counts as one request against the caller's rate limit: a batch larger than the plan's burst is 422, one the bucket cannot cover now is 429 with Retry-After.",
  },
  loginCustomer: {
    summary: "Log in: a bearer token for 24 hours",
    description:
      "Checks the username and password and answers a session token (JWT) valid 24 hours, sent as `Authorization: Bearer`. X-Rate-Limit tells the requests per hour of the customer's plan.",
  },
  logoutCustomer: {
    summary: "End the session: the token stops working on every gateway within a second",
    description: "Revokes the bearer token that made the call; other sessions of the customer go on working.",
  },
  getCustomerByName: {
    summary: "Read an account (a customer only its own; an operator key anyone's)",
    description:
      "A customer reads only its own account (anyone else's is 403); an operator API key reads any.",
  },
  updateCustomer: {
    summary: "Replace one's own account (username, email and password required)",
    description:
      "Needs `currentPassword`, the account's password (422 without it, 403 when wrong), whatever changes. A new password ends, on every gateway within 2 seconds and before this answers, every other session of the customer, every OAuth grant it gave (access and refresh tokens) and every API key it made: whoever else was in the account is out. The session that made the change goes on working.",
  },
  deleteCustomer: {
    summary: "Erase one's own account, its API keys and sessions, and its personal data",
    description:
      "Self only, with the account's password again in the body (`currentPassword`: 422 without it, 403 when wrong), so a stolen token alone cannot erase the account. Ends every session, OAuth grant and API key of the customer on every gateway before answering, frees the username and email, and destroys the key its personal data was sealed with, so that data cannot be read again.",
  },
  getCustomerHistory: {
    summary: "What happened to one's own account, and when (the customer only)",
    description: `${history} With the personal data each change recorded (names, email, phone), which is the caller's own. Key hashes and passwords never appear. Another customer's name, or an operator key, is 403.`,
  },
  exportCustomerData: {
    summary:
      "Everything the system holds about a customer, as one JSON document (the customer, or an operator key)",
    description:
      "The account, the shipping addresses of its orders, its orders, its API keys (ids, prefixes, expiry; never a key), its OAuth grants and the account's whole history. A customer exports only its own account (anyone else's is 403); an operator API key any. An erased account is 404.",
  },

  // API keys
  createApiKey: {
    summary: "Issue a personal API key (shown once; valid 90 days)",
    description:
      "The key acts for its customer with X-API-Key: it reads what the customer may read. It is stored only as a hash; this response is the only time it is shown.",
  },
  listApiKeys: {
    summary: "List one's keys that are not revoked (without the keys themselves)",
    description:
      "The customer's keys that are not revoked, with their prefix, plan and dates; the keys themselves were shown once, at creation.",
  },
  revokeApiKey: {
    summary: "Revoke a key: it stops working on every gateway within a second",
    description:
      "The key is refused from then on, on every gateway; an unknown or already revoked id is 404.",
  },

  // OAuth 2.0
  listOAuthGrants: {
    summary: "List the OAuth grants one gave to clients that are still live",
    description:
      "Each client the customer signed in to and allowed, with the scopes granted and when it was last used; revoking one ends its tokens.",
  },
  revokeOAuthGrant: {
    summary: "Revoke a grant: its access and refresh tokens stop working on every gateway within a second",
    description:
      "Ends the grant: its access tokens and its refresh token stop working on every gateway. The client must ask the customer again.",
  },
  jwks: {
    summary: "The public keys tokens are signed with",
    description:
      "The Ed25519 public keys (JWK set) every access and session token is signed with, for verifying tokens without calling the gateway.",
  },
  authorizationServerMetadata: {
    summary: "RFC 8414 metadata",
    description:
      "RFC 8414 authorization server metadata: the endpoints, grant types, scopes and client authentication methods supported.",
  },
  oauthAuthorize: {
    summary: "Sign-in and consent page (authorization code with PKCE, or implicit)",
    description:
      "The page a client sends the customer's browser to: it names the client and the scopes asked for, and takes the customer's username and password. Served with a Content-Security-Policy that forbids framing and scripts.",
  },
  oauthSignIn: {
    summary: "Submit the sign-in and consent form",
    description:
      "The page's form, submitted by the browser. Allow: redirects to the client with a code (response_type=code) or the token in the fragment (token, public clients only). Deny: redirects with error=access_denied. A wrong password shows the page again.",
  },
  oauthToken: {
    summary: "Tokens: authorization_code (with code_verifier), client_credentials, refresh_token",
    description:
      "Confidential clients authenticate with HTTP Basic or client_secret_post; public clients send client_id and rely on PKCE. client_credentials is for confidential clients only.",
  },
  oauthRevoke: {
    summary: "RFC 7009 token revocation",
    description:
      "A refresh token ends its whole grant (every access and refresh token of it); an access token ends itself. Clients authenticate as at the token endpoint. The answer is 200 whether or not the token was valid, so it reveals nothing; a token of another client is left alone.",
  },

  // Webhooks
  rotateWebhookSigningKey: {
    summary: "Rotate the system's webhook signing key without a gap",
    description:
      "A new Ed25519 key signs every v1a signature from now on and is published at once. During the overlap (24 h unless overlapSeconds says otherwise, at most 7 days) the previous key also signs and stays published, so receivers holding either key set verify every delivery.",
  },
  createWebhook: {
    summary: "Register a receiving URL and the events wanted",
    description:
      "The secret is generated when absent and shown only in this response. The URL must be https and must not resolve to a loopback, private, link-local or metadata address (checked again at each delivery).",
  },
  listWebhooks: {
    summary: "List registrations (oldest first, paginated)",
    description:
      "Every registration, oldest first, paginated with limit and cursor. Secrets are never shown again after creation.",
  },
  getWebhook: {
    summary: "Read a registration (never its secret)",
    description:
      "The registration with its status (active, paused or disabled), why, and since when; never its secret.",
  },
  deleteWebhook: {
    summary: "Delete a registration; its waiting deliveries are cancelled",
    description:
      "The registration ends; its waiting and dead-lettered deliveries are cancelled and nothing more is sent to its URL.",
  },
  updateWebhook: {
    summary: "Change a registration's url, events, filter, throttle, auth or description in place",
    description:
      "Only the fields given change; the rules of creation apply (https, no private address, known kinds). Deliveries already waiting go to the new URL. The secret changes only through rotate-secret.",
  },
  listWebhookDeliveries: {
    summary: "Deliveries of a registration, newest first, with every attempt",
    description:
      "Newest first, paginated, optionally filtered by status and by event kind (type): each delivery with its event, status, every attempt (status code, error, duration) and when the next attempt is due; dead letters have status dead_lettered. An unknown status or type is a 400 naming the parameter. One delivery's request and answers are at /webhooks/{id}/deliveries/{deliveryId}.",
  },
  getWebhookDelivery: {
    summary: "One delivery with every attempt's request and the receiver's answer",
    description:
      "The delivery's body (the same bytes in every attempt) and, per attempt, the URL and headers sent (signature headers shown; a receiver credential such as Authorization shown as [redacted]) and the receiver's answer: status, headers and the first 4 KiB of its body, or the network error.",
  },
  resendWebhookDelivery: {
    summary: "Send one delivered or dead-lettered delivery again, as a new round of attempts",
    description:
      "Starts a new round of attempts of this delivery (retried like the first), recorded in the same delivery: same webhook-id and body, fresh webhook-timestamp and signatures. A delivery still on its way (pending, attempting, retry_scheduled) or cancelled is a 409: wait for it to finish. On a paused or disabled registration the new round waits like any delivery.",
  },
  testWebhook: {
    summary: "Send a webhook.test event to the registration",
    description:
      "Sends a webhook.test event to this registration only, whatever kinds it asked for, signed and retried like any other. On a paused or disabled registration the delivery waits.",
  },
  pauseWebhook: {
    summary: "Pause deliveries: they wait, are not attempted, and keep their attempts",
    description:
      "New events still create deliveries, which wait too. An attempt already in flight finishes. Pausing a paused or disabled registration changes nothing.",
  },
  resumeWebhook: {
    summary: "Resume a paused or disabled registration; what waited goes out, oldest first",
    description:
      "Makes a paused or disabled registration active again: deliveries that waited go out, oldest event first. Resuming an active registration changes nothing.",
  },
  rotateWebhookSecret: {
    summary: "Rotate the signing secret without a gap",
    description:
      "The new secret (shown only here) signs every delivery from now on. During the overlap (24 h unless overlapSeconds says otherwise, at most 7 days) webhook-signature carries two v1 signatures, new secret first, so receivers may switch at any time; X-Cheese-Signature carries the new secret's only.",
  },
  replayWebhook: {
    summary: "Replay finished deliveries: the dead letter queue, or a window of time",
    description:
      "Without a body, every dead-lettered delivery starts again. With one, the deliveries created in [since, until) whose status is in `status` (dead_lettered when absent) do. Each starts a new round of attempts with its original event id and body (receivers deduplicate on webhook-id). Deliveries still waiting or in flight are left alone. One call replays at most WEBHOOK_REPLAY_MAX (1000) deliveries; a window holding more is a 422: narrow it.",
  },
  previewWebhookFilter: {
    summary: "Try a payload filter on the most recent recorded events before saving it",
    description:
      "Evaluates the CEL filter on the most recent events recorded for delivery (those of a kind some registration wanted), of the kinds in `events` (every kind when absent), newest first, at most `limit` (50 when absent, at most 500). Nothing is delivered or saved. A filter that does not parse or type-check is a 422 naming filter, as on POST /webhooks.",
  },

  // Dead letters
  listDeadLetters: {
    summary: "Integration events a service kept failing to handle, oldest first",
    description:
      "Each with the consumer that failed it, the event as published (subject, headers, payload), the last error and how many deliveries were made. An event lands here once its consumer has failed it for DEAD_LETTER_AFTER (24 h by default), retried meanwhile with a backoff of up to 5 minutes.",
  },
  replayDeadLetter: {
    summary: "Hand a dead letter back to the consumer that failed it",
    description:
      "The event goes to that consumer only (as a first delivery; consumers are idempotent by event id), and leaves the list. Should it fail again, it is retried and, after DEAD_LETTER_AFTER, dead-lettered again.",
  },
  deleteDeadLetter: {
    summary: "Discard a dead letter for good",
    description: "The event is not handled by its consumer, now or later. Other consumers are not affected.",
  },

  // Operator sessions
  openOperatorSession: {
    summary: "Open an operator session: a token for 8 hours",
    description:
      "With an operator API key. The token only checks and ends this session (GET and DELETE /operator/session); the API's other operations still take the key.",
  },
  getOperatorSession: {
    summary: "The operator session the token belongs to, while it is in force",
    description: "401 once it expired, was ended on any gateway, or its operator key left API_KEYS.",
  },
  endOperatorSession: {
    summary: "End the operator session: its token stops working on every gateway within a second",
    description:
      "The console's sign-out. The token is revoked until it would have expired; the operator key and its other sessions go on working.",
  },

  // Webhook events
  listWebhookEventTypes: {
    summary: "The event catalogue: every kind, when it is sent, its data schema and an example",
    description:
      "Every kind a registration may ask for, with when it is sent, the JSON Schema of the envelope's `data` and an example delivery body. The same as the OpenAPI document's `webhooks` section and /v2/asyncapi.json.",
  },
  asyncApiDocument: {
    summary: "The AsyncAPI 3 document of the webhook events and their headers",
    description:
      "One channel per event kind (its address is the registration's URL), with the delivery headers and the envelope.",
  },
  webhookSigningKeys: {
    summary: "The public keys of the v1a webhook signatures (a JWK set)",
    description: webhookSigningKeys,
  },
  wellKnownWebhookSigningKeys: {
    summary: "The public keys of the v1a webhook signatures (a JWK set), at the gateway root",
    description: `${webhookSigningKeys} The same set as GET /v2/webhooks/keys.`,
  },
} as const satisfies Record<string, OperationText>;

/** The operationId of every operation of the API. */
export type OperationId = keyof typeof operationText;
