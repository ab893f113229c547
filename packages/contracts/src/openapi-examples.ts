import { errorTypeFor } from "./errors.ts";
import type { WebhookEventKind } from "./webhook.ts";
import { webhookEventExample } from "./webhook-events.ts";

/**
 * The examples of the OpenAPI document: one request body and one response body per operation and
 * status (the webhook events' come with their schemas, `webhookEventData`). The gateway's
 * document is built with this module (`withExamples` puts each example on its media type), and a
 * test validates every example against the schema it illustrates, and fails when a body has
 * none: an example cannot rot. Error responses without an example of their own get one made from
 * their status and description (`errorExample`).
 */

interface OperationExamples {
  /** The request body, whatever its media type (JSON, form fields, multipart fields). */
  request?: unknown;
  /** Response bodies by status. */
  responses?: Record<string, unknown>;
  /** The field a 422 of this operation names in its example. */
  invalidField?: { field: string; message: string };
}

const API = "https://cheese.example.com";
const at = (day: string, time = "09:30:00") => `2026-03-${day}T${time}.000Z`;

const comte = {
  id: 42,
  name: "Comté 18 mois",
  category: { id: 3, name: "Hard" },
  photoUrls: [`${API}/v2/images/5f0c6b1e-8d2a-4c1b-9e3f-2a7d4b6c8e01.jpg`],
  tags: [
    { id: 5, name: "cow" },
    { id: 9, name: "raw milk" },
  ],
  status: "available",
  origin: "France",
  pricePerKg: 34.5,
  ageMonths: 18,
  organic: true,
  createdAt: at("01"),
  updatedAt: at("02", "14:05:00"),
};

const stilton = {
  id: 43,
  name: "Stilton",
  category: { id: 4, name: "Blue" },
  photoUrls: [],
  tags: [{ id: 5, name: "cow" }],
  status: "available",
  origin: "United Kingdom",
  pricePerKg: 28,
  ageMonths: 3,
  organic: false,
  createdAt: at("01", "10:00:00"),
  updatedAt: at("01", "10:00:00"),
};

const comteInput = {
  name: "Comté 18 mois",
  category: { name: "Hard" },
  tags: [{ name: "cow" }, { name: "raw milk" }],
  status: "available",
  origin: "France",
  pricePerKg: 34.5,
  ageMonths: 18,
  organic: true,
};

const address = { street: "221B Baker Street", city: "London", zipCode: "NW1 6XE", country: "GB" };

const order = {
  id: 1007,
  items: [{ cheeseId: 42, cheeseName: "Comté 18 mois", quantity: 2, pricePerKg: 34.5 }],
  shippingAddress: { ...address, state: null },
  status: "placed",
  notes: "Leave with the concierge",
  total: 69,
  shipDate: null,
  createdAt: at("03", "11:00:00"),
  updatedAt: at("03", "11:00:00"),
};
const shippedOrder = {
  ...order,
  status: "shipped",
  shipDate: at("04", "08:15:00"),
  updatedAt: at("04", "08:15:00"),
};

const alice = {
  id: 12,
  username: "alice",
  firstName: "Alice",
  lastName: "Martin",
  email: "alice@example.com",
  phone: "+44 20 7946 0000",
  customerStatus: "silver",
  favouriteCheese: comte,
  createdAt: at("01", "08:00:00"),
};

const aliceInput = {
  username: "alice",
  firstName: "Alice",
  lastName: "Martin",
  email: "alice@example.com",
  password: "correct horse battery",
  phone: "+44 20 7946 0000",
  favouriteCheese: { id: 42 },
};

const webhook = {
  id: 3,
  url: "https://example.com/hooks/cheese",
  events: ["order.placed", "order.shipped"],
  description: "fulfilment",
  signatureAlgorithms: ["hmac-sha256"],
  filter: null,
  ordered: false,
  rateLimit: null,
  auth: null,
  status: "active",
  statusReason: null,
  statusSince: at("01", "12:00:00"),
  failingSince: null,
  previousSecretExpiresAt: null,
  createdAt: at("01", "12:00:00"),
  updatedAt: at("01", "12:00:00"),
};
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwGkY0aEbSL/c=";

const signingKeySet = {
  keys: [
    {
      kty: "OKP",
      crv: "Ed25519",
      x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
      kid: "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k",
      alg: "EdDSA",
      use: "sig",
    },
  ],
};

const apiKey = {
  id: 7,
  prefix: "chs_Xq3v9LmP",
  plan: "pro",
  createdAt: at("01", "08:00:00"),
  expiresAt: "2026-05-30T08:00:00.000Z",
};

const image = {
  imageUrl: `${API}/v2/images/5f0c6b1e-8d2a-4c1b-9e3f-2a7d4b6c8e01.jpg`,
  thumbnailUrl: `${API}/v2/images/5f0c6b1e-8d2a-4c1b-9e3f-2a7d4b6c8e01.thumb.webp`,
  size: 184_320,
};

const accessToken =
  "eyJhbGciOiJFZERTQSIsImtpZCI6IjNmOWEiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJvcHMiLCJzY29wZSI6IndyaXRlOmNoZWVzZXMifQ.c2lnbmF0dXJl";

const signInPage =
  '<!doctype html><html lang="en"><head><title>Sign in to Cheese Store</title></head><body><h1>Sign in to Cheese Store</h1><form method="post" action="/oauth/authorize">…</form></body></html>';

const invalidClient = {
  code: 401,
  type: "unauthorized",
  message: "unknown client or wrong secret",
  error: "invalid_client",
  error_description: "unknown client or wrong secret",
};

const pageOf = <T>(items: T[], total?: number) => ({
  items,
  nextCursor: "eyJrIjoiQ29tdMOpIDE4IG1vaXMiLCJpZCI6NDJ9",
  hasMore: true,
  ...(total === undefined ? {} : { total }),
});

const aliceHistory = [
  {
    type: "customer.registered",
    at: alice.createdAt,
    data: {
      username: "alice",
      firstName: "Alice",
      lastName: "Martin",
      email: "alice@example.com",
      phone: "+44 20 7946 0000",
      favouriteCheese: { id: 42, name: "Comté 18 mois" },
    },
  },
  {
    type: "api_key.issued",
    at: apiKey.createdAt,
    data: { keyId: 7, prefix: apiKey.prefix, expiresAt: apiKey.expiresAt },
  },
  {
    type: "customer.status_changed",
    at: at("05", "16:45:00"),
    data: { from: "bronze", to: "silver" },
  },
];

const aliceGrant = {
  id: "Jm0r3c5XbT2vQ8kN1pL6sA",
  clientId: "cheese-board-app",
  scopes: ["read:cheeses", "read:orders"],
  createdAt: at("02", "18:00:00"),
  lastUsedAt: at("05", "07:12:00"),
  expiresAt: "2026-04-04T07:12:00.000Z",
};

export const operationExamples: Record<string, OperationExamples> = {
  // Cheeses
  addCheese: { request: comteInput, responses: { 201: comte } },
  updateCheese: {
    request: { ...comteInput, id: 42, category: { id: 3, name: "Hard" }, pricePerKg: 36 },
    responses: { 200: { ...comte, pricePerKg: 36, updatedAt: at("05") } },
  },
  listCheeses: { responses: { 200: pageOf([comte, stilton], 57) } },
  findCheesesByStatus: { responses: { 200: [comte, stilton] } },
  findCheesesByTags: { responses: { 200: [comte, stilton] } },
  getCheeseById: { responses: { 200: comte } },
  updateCheeseWithForm: {
    request: { name: "Comté 24 mois", status: "pending" },
    responses: { 200: { ...comte, name: "Comté 24 mois", status: "pending", updatedAt: at("05") } },
  },
  deleteCheese: {},
  uploadImage: {
    request: { file: "(the image's bytes)", caption: "A wheel at 18 months", isPrimary: true },
    responses: { 200: image },
    invalidField: { field: "caption", message: "at most 500 characters" },
  },
  listCheeseImages: {
    responses: {
      200: [
        {
          ...image,
          contentType: "image/jpeg",
          width: 1600,
          height: 1200,
          caption: "A wheel at 18 months",
          isPrimary: true,
          createdAt: at("02", "14:05:00"),
        },
      ],
    },
  },
  getImage: {},
  getCheeseHistory: {
    responses: {
      200: {
        items: [
          { type: "cheese.added", at: at("01"), data: { ...comte, photoUrls: [], updatedAt: at("01") } },
          {
            type: "cheese.image_attached",
            at: at("02", "14:05:00"),
            data: {
              ...image,
              caption: "A wheel at 18 months",
              isPrimary: true,
              width: 1600,
              height: 1200,
              contentType: "image/jpeg",
            },
          },
          { type: "cheese.status_changed", at: at("04"), data: { from: "available", to: "pending" } },
        ],
        nextCursor: null,
        hasMore: false,
      },
    },
  },

  // Store
  getInventory: { responses: { 200: { available: 41, pending: 9, sold: 7 } } },
  placeOrder: {
    request: {
      items: [{ cheeseId: 42, quantity: 2 }],
      shippingAddress: address,
      notes: "Leave with the concierge",
    },
    responses: { 201: order },
    invalidField: { field: "items[0].quantity", message: "Too big: expected number to be <=100" },
  },
  getOrderById: { responses: { 200: order } },
  deleteOrder: {},
  listOrders: { responses: { 200: pageOf([order], 1) } },
  shipOrder: {
    request: {
      carrier: "Royal Mail",
      trackingNumber: "RM123456785GB",
      estimatedDelivery: at("06", "17:00:00"),
    },
    responses: { 200: shippedOrder },
  },
  deliverOrder: {
    responses: { 200: { ...shippedOrder, status: "delivered", updatedAt: at("06", "10:42:00") } },
  },
  getOrderHistory: {
    responses: {
      200: {
        items: [
          {
            type: "order.placed",
            at: order.createdAt,
            data: { status: "placed", items: order.items, total: 69 },
          },
          { type: "order.approved", at: at("03", "11:00:02"), data: { status: "approved" } },
          {
            type: "order.shipped",
            at: at("04", "08:15:00"),
            data: {
              status: "shipped",
              carrier: "Royal Mail",
              trackingNumber: "RM123456785GB",
              estimatedDelivery: at("06", "17:00:00"),
            },
          },
        ],
        nextCursor: null,
        hasMore: false,
      },
    },
  },

  // Customers
  createCustomer: {
    request: aliceInput,
    responses: { 201: { ...alice, customerStatus: "bronze" } },
    invalidField: { field: "email", message: "Invalid email address" },
  },
  createCustomersWithArray: {
    request: [aliceInput, { ...aliceInput, email: "alice@example.org" }],
    responses: {
      200: {
        created: [{ ...alice, customerStatus: "bronze" }],
        errors: [{ index: 1, message: "username or email exists" }],
      },
    },
    invalidField: { field: "(body)", message: "Too big: expected array to have <=100 items" },
  },
  loginCustomer: {
    request: { username: "alice", password: "correct horse battery" },
    responses: { 200: { token: accessToken, expiresAt: at("06", "09:30:00") } },
    invalidField: { field: "password", message: "Invalid input: expected string, received undefined" },
  },
  logoutCustomer: {},
  getCustomerByName: { responses: { 200: alice } },
  updateCustomer: {
    request: { ...aliceInput, email: "alice.martin@example.com", currentPassword: "correct horse battery" },
    responses: { 200: { ...alice, email: "alice.martin@example.com" } },
    invalidField: { field: "currentPassword", message: "Invalid input: expected string, received undefined" },
  },
  deleteCustomer: {
    request: { currentPassword: "correct horse battery" },
    invalidField: { field: "currentPassword", message: "Invalid input: expected string, received undefined" },
  },
  getCustomerHistory: {
    responses: { 200: { items: aliceHistory, nextCursor: null, hasMore: false } },
  },
  exportCustomerData: {
    responses: {
      200: {
        exportedAt: at("06", "08:00:00"),
        customer: alice,
        addresses: [{ ...address, state: null }],
        orders: [order],
        apiKeys: [{ ...apiKey, revoked: false }],
        oauthGrants: [aliceGrant],
        history: aliceHistory,
      },
    },
  },

  // API keys and grants
  createApiKey: {
    responses: { 201: { ...apiKey, key: "chs_Xq3v9LmP2wKd7RtY0sNfB8hJ4cVaE6uZ1oGiT5yQxW3" } },
  },
  listApiKeys: { responses: { 200: [apiKey] } },
  revokeApiKey: {},
  listOAuthGrants: {
    responses: {
      200: [aliceGrant],
    },
  },
  revokeOAuthGrant: {},

  // Webhooks
  createWebhook: {
    request: {
      url: "https://example.com/hooks/cheese",
      events: ["order.placed", "order.shipped"],
      description: "fulfilment",
      filter: 'type == "order.placed" && data.total > 100.0',
    },
    responses: { 201: { ...webhook, filter: 'type == "order.placed" && data.total > 100.0', secret } },
    invalidField: { field: "url", message: "the receiver must be a public https URL" },
  },
  listWebhooks: { responses: { 200: { items: [webhook], nextCursor: null, hasMore: false } } },
  getWebhook: { responses: { 200: webhook } },
  updateWebhook: {
    request: {
      url: "https://example.com/hooks/cheese-v2",
      events: ["order.placed"],
      rateLimit: { perSecond: 10 },
      auth: { type: "headers", headers: { "X-Api-Key": "k_live_3f9a" } },
    },
    responses: {
      200: {
        ...webhook,
        url: "https://example.com/hooks/cheese-v2",
        events: ["order.placed"],
        rateLimit: { perSecond: 10 },
        auth: { type: "headers", headers: { "X-Api-Key": "********" } },
        updatedAt: at("05"),
      },
    },
    invalidField: { field: "events", message: "Too small: expected array to have >=1 items" },
  },
  deleteWebhook: {},
  previewWebhookFilter: {
    request: { filter: 'type == "order.placed" && data.total > 100.0', events: ["order.placed"], limit: 20 },
    responses: {
      200: {
        matched: 1,
        total: 2,
        items: [
          {
            id: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
            type: "order.placed",
            created_at: at("03", "11:00:00"),
            matched: true,
          },
          {
            id: "evt_0b9e2f4d6a8c1e3f5a7b9d0c2e4f6a8b",
            type: "order.placed",
            created_at: at("03", "10:58:00"),
            matched: false,
          },
        ],
      },
    },
    invalidField: {
      field: "filter",
      message: "is not a CEL expression: <input>:1:6: found = but expecting end of input",
    },
  },
  listWebhookDeliveries: {
    responses: {
      200: {
        items: [
          {
            id: 88,
            webhookId: 3,
            eventId: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
            eventType: "order.placed",
            status: "retry_scheduled",
            deadLettered: false,
            attempts: [
              {
                attempt: 1,
                round: 0,
                startedAt: at("03", "11:00:01"),
                outcome: "failed",
                statusCode: 502,
                error: null,
                durationMs: 134,
              },
            ],
            nextAttemptAt: at("03", "11:01:01"),
            createdAt: at("03", "11:00:01"),
            updatedAt: at("03", "11:00:01"),
          },
        ],
        nextCursor: null,
        hasMore: false,
      },
    },
  },
  getWebhookDelivery: {
    responses: {
      200: {
        id: 88,
        webhookId: 3,
        eventId: "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
        eventType: "order.placed",
        status: "delivered",
        deadLettered: false,
        body: '{"id":"evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c","type":"order.placed","created_at":"2026-03-03T11:00:00.000Z","data":{"order_id":"1042","customer_id":"7","status":"placed","total":51.75,"items":[],"updated_at":"2026-03-03T11:00:00.000Z"}}',
        attempts: [
          {
            attempt: 1,
            round: 0,
            startedAt: at("03", "11:00:01"),
            outcome: "failed",
            statusCode: 500,
            error: "receiver answered 500",
            durationMs: 134,
            request: {
              url: "https://example.com/hooks/cheese",
              headers: {
                "content-type": "application/json",
                "user-agent": "CheeseStore-Webhooks/2.0",
                "x-cheese-signature":
                  "sha256=4f1c0b8e2d7a9c3e5b6f8a1d0c2e4b7a9f3d5c8e1b0a2d4f6c8e0b2a4d6f8c1e",
                "x-cheese-event": "order.placed",
                "x-cheese-delivery": "88",
                "webhook-id": "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
                "webhook-timestamp": "1772535601",
                "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
                authorization: "[redacted]",
              },
            },
            response: {
              headers: { "content-type": "text/plain" },
              body: "stock service unavailable",
              bodyTruncated: false,
            },
          },
          {
            attempt: 2,
            round: 0,
            startedAt: at("03", "11:01:01"),
            outcome: "failed",
            statusCode: null,
            error: "connection refused",
            durationMs: 3,
            request: {
              url: "https://example.com/hooks/cheese",
              headers: {
                "content-type": "application/json",
                "webhook-id": "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
                "webhook-timestamp": "1772535661",
                "webhook-signature": "v1,2ml3WCp2PHzTLyW0z7X2cl5yQ3TTJHK/4L5LRX7y3Ks=",
              },
            },
            response: null,
          },
          {
            attempt: 3,
            round: 0,
            startedAt: at("03", "11:06:01"),
            outcome: "succeeded",
            statusCode: 200,
            error: null,
            durationMs: 41,
            request: {
              url: "https://example.com/hooks/cheese",
              headers: {
                "content-type": "application/json",
                "webhook-id": "evt_6f1d0a4c2b9e8f7a5d3c1b0e9f8a7d6c",
                "webhook-timestamp": "1772535961",
                "webhook-signature": "v1,Px01p6XJ8a1cJn1AiTSHNlXveLyu6JbDDb/WsZX5bFk=",
              },
            },
            response: {
              headers: { "content-type": "application/json" },
              body: '{"received":true}',
              bodyTruncated: false,
            },
          },
        ],
        nextAttemptAt: null,
        createdAt: at("03", "11:00:01"),
        updatedAt: at("03", "11:06:01"),
      },
    },
  },
  resendWebhookDelivery: { responses: { 202: { deliveryId: 88, round: 1 } } },
  testWebhook: { responses: { 202: { deliveryId: 89 } } },
  pauseWebhook: {
    responses: {
      200: { ...webhook, status: "paused", statusReason: "paused by an operator", statusSince: at("05") },
    },
  },
  resumeWebhook: { responses: { 200: { ...webhook, statusSince: at("05", "10:00:00") } } },
  rotateWebhookSecret: {
    request: { overlapSeconds: 3600 },
    responses: {
      200: {
        secret: "whsec_3q2+7w8kVw1cKp0o2Ck9xq9VfEo0Q3B6v7yYlEoNnXc=",
        previousSecretExpiresAt: at("05", "10:30:00"),
      },
    },
    invalidField: { field: "overlapSeconds", message: "Too big: expected number to be <=604800" },
  },
  listWebhookEventTypes: {
    responses: {
      200: {
        items: [
          {
            type: "webhook.test",
            description: "sent when POST /webhooks/{id}/test is called",
            dataSchema: {
              $schema: "https://json-schema.org/draft/2020-12/schema",
              type: "object",
              properties: {
                webhook_id: { type: "string", description: "an id, as a string" },
                message: { type: "string" },
              },
              required: ["webhook_id", "message"],
            },
            example: webhookEventExample("webhook.test"),
          },
        ],
      },
    },
  },
  asyncApiDocument: {
    responses: {
      200: {
        asyncapi: "3.1.0",
        info: { title: "Cheese Store webhooks", version: "2.0.0" },
        defaultContentType: "application/json",
        channels: {
          webhook_test: {
            address: null,
            messages: { webhook_test: { $ref: "#/components/messages/webhook_test" } },
          },
        },
      },
    },
  },
  webhookSigningKeys: { responses: { 200: signingKeySet } },
  wellKnownWebhookSigningKeys: { responses: { 200: signingKeySet } },
  rotateWebhookSigningKey: {
    request: { overlapSeconds: 3600 },
    responses: {
      200: {
        kid: "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k",
        previousKid: "Yq3v9LmPx0c2WfT8nR4sB1uK7hD5jA6eG0iZ3oN9tQs",
        previousKeyExpiresAt: at("06", "10:30:00"),
      },
    },
    invalidField: { field: "overlapSeconds", message: "Too big: expected number to be <=604800" },
  },
  replayWebhook: {
    request: { since: "2026-03-01T04:00:00Z", until: "2026-03-01T10:00:00Z", status: ["dead_lettered"] },
    responses: { 202: { replayed: 12 } },
    invalidField: { field: "since", message: "must be before until" },
  },

  // Dead letters
  listDeadLetters: {
    responses: {
      200: {
        items: [
          {
            id: "17",
            consumer: "ordering-cheese-deleted",
            event: {
              id: "catalogue-cheese-42-3",
              subject: "events.catalogue.cheese.deleted",
              payload: { cheeseId: 42 },
              headers: { "x-request-id": "0b6c4f9e-58a1-4d0c-9d55-3f5a1f2e7c11" },
              publishedAt: at("02", "08:00:00"),
            },
            error: "RemoteError: no reply on catalogue.cheese.get within 5000 ms",
            deliveries: 301,
            firstFailedAt: at("02", "08:00:00"),
            deadLetteredAt: at("03", "08:00:04"),
          },
        ],
        nextCursor: null,
        hasMore: false,
      },
    },
  },
  replayDeadLetter: { responses: { 202: { id: "17", consumer: "ordering-cheese-deleted" } } },

  // Operator sessions
  openOperatorSession: {
    responses: {
      201: { token: accessToken, operatorId: "op:3f9a1c2b7d4e", expiresAt: at("06", "17:30:00") },
    },
  },
  getOperatorSession: {
    responses: { 200: { operatorId: "op:3f9a1c2b7d4e", expiresAt: at("06", "17:30:00") } },
  },
  endOperatorSession: {},

  // OAuth 2.0
  jwks: {
    responses: {
      200: {
        keys: [
          {
            kty: "OKP",
            crv: "Ed25519",
            x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
            kid: "3f9aKc0rYl4Ew0b8h0aQ2mU7ZQx1m6cD5sVbN0pR2tA",
            alg: "EdDSA",
            use: "sig",
          },
        ],
      },
    },
  },
  authorizationServerMetadata: {
    responses: {
      200: {
        issuer: API,
        authorization_endpoint: `${API}/oauth/authorize`,
        token_endpoint: `${API}/oauth/token`,
        revocation_endpoint: `${API}/oauth/revoke`,
        jwks_uri: `${API}/.well-known/jwks.json`,
        scopes_supported: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
        response_types_supported: ["code", "token"],
        grant_types_supported: ["authorization_code", "client_credentials", "refresh_token", "implicit"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
      },
    },
  },
  oauthAuthorize: {
    responses: {
      200: signInPage,
      400: {
        code: 400,
        type: "bad_request",
        message: "redirect_uri is not registered for this client",
        error: "invalid_request",
        error_description: "redirect_uri is not registered for this client",
      },
    },
  },
  oauthSignIn: {
    request: {
      response_type: "code",
      client_id: "cheese-board-app",
      redirect_uri: "https://app.example.com/callback",
      scope: "read:cheeses read:orders",
      state: "af0ifjsldkj",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      username: "alice",
      password: "correct horse battery",
      decision: "allow",
    },
    responses: {
      401: {
        code: 401,
        type: "unauthorized",
        message: "invalid username or password",
        error: "access_denied",
        error_description: "invalid username or password",
      },
    },
  },
  oauthToken: {
    request: { grant_type: "client_credentials", scope: "read:cheeses write:cheeses" },
    responses: {
      200: {
        access_token: accessToken,
        token_type: "Bearer",
        expires_in: 3600,
        scope: "read:cheeses write:cheeses",
      },
      400: {
        code: 400,
        type: "bad_request",
        message: "the code is unknown, expired, already used, or not this client's",
        error: "invalid_grant",
        error_description: "the code is unknown, expired, already used, or not this client's",
      },
      401: invalidClient,
    },
  },
  oauthRevoke: {
    request: { token: "q4Yd8TzP1mWc0sK6vR3nB9hL2xF7jA5eG0uI8oC1tZ", token_type_hint: "refresh_token" },
    responses: {
      400: {
        code: 400,
        type: "bad_request",
        message: "token is required",
        error: "invalid_request",
        error_description: "token is required",
      },
      401: invalidClient,
    },
  },
};

/** The example of an error response: its status, that status's type, and what it is about. */
function errorExample(status: number, message: string): object {
  return { code: status, type: errorTypeFor(status), message };
}

/** An error of the authorization server: the API's error body with RFC 6749's fields. */
function oauthErrorExample(status: number, message: string): object {
  const error = status === 401 ? "invalid_client" : "invalid_request";
  return { ...errorExample(status, message), error, error_description: message };
}

function validationErrorExample(invalid: { field: string; message: string }): object {
  return {
    code: 422,
    type: "validation_error",
    message: "request body failed validation",
    errors: [invalid],
  };
}

// biome-ignore lint/suspicious/noExplicitAny: the generated document is walked generically
type Json = any;

const errorSchemas = new Set(["Error", "ValidationError", "OAuthError"]);
const schemaName = (schema: Json): string | undefined =>
  typeof schema?.$ref === "string" ? schema.$ref.split("/").pop() : undefined;
const isBinary = (schema: Json) => schema?.type === "string" && schema?.format === "binary";

/** The example of one response body: the operation's own, else one made for an error body. */
function responseExample(operationId: string, status: string, description: string, media: Json): unknown {
  const own = operationExamples[operationId];
  if (own?.responses && status in own.responses) return own.responses[status];
  const name = schemaName(media.schema);
  if (name === "ValidationError") {
    return validationErrorExample(own?.invalidField ?? { field: "name", message: "Required" });
  }
  if (name === "OAuthError") return oauthErrorExample(Number(status), description);
  if (name && errorSchemas.has(name)) return errorExample(Number(status), description);
  return undefined;
}

function htmlExample(description: string): string {
  return `<!doctype html><html lang="en"><head><title>Cheese Store</title></head><body><p role="alert">${description}</p></body></html>`;
}

/** Puts the examples on every request and response body of `document` they belong to. */
export function withExamples(document: Json): Json {
  const operations = (paths: Json) =>
    Object.values(paths ?? {}).flatMap((item: Json) => Object.values(item) as Json[]);
  for (const operation of operations(document.paths)) {
    const id: string = operation.operationId;
    for (const media of Object.values(operation.requestBody?.content ?? {}) as Json[]) {
      const example = operationExamples[id]?.request;
      if (example !== undefined) media.example = example;
    }
    for (const [status, response] of Object.entries(operation.responses ?? {}) as [string, Json][]) {
      for (const [type, media] of Object.entries(response.content ?? {}) as [string, Json][]) {
        if (isBinary(media.schema)) continue;
        const own = operationExamples[id]?.responses?.[status];
        const example =
          type === "text/html"
            ? typeof own === "string"
              ? own
              : htmlExample(response.description)
            : responseExample(id, status, response.description, media);
        if (example !== undefined) media.example = example;
      }
    }
  }
  for (const [kind, item] of Object.entries(document.webhooks ?? {}) as [string, Json][]) {
    const example = webhookEventExample(kind as WebhookEventKind);
    for (const media of Object.values(item.post?.requestBody?.content ?? {}) as Json[]) {
      media.example = example;
    }
  }
  return document;
}
