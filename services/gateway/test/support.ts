import { createFileBlobStore } from "@cheese/blob-store";
import { createInProcessBroker, type MessageBus } from "@cheese/messaging";
import { type Clock, createLogger, systemClock } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import type { AppOptions } from "../src/app.ts";
import { createApp } from "../src/app.ts";
import { createAuthorizer } from "../src/auth/authorize.ts";
import { apiKeysSchema, oauthClientsSchema } from "../src/auth/credentials.ts";
import { loadSigningKey } from "../src/auth/signing-key.ts";
import { TokenService } from "../src/auth/tokens.ts";
import type { ReadCache } from "../src/read-cache.ts";

export const OPERATOR_KEY = "test-operator-key";
export const OPERATOR_CLIENT = { id: "ops", secret: "ops-secret" };

/**
 * A gateway app over the given bus, with one operator key and one confidential client (and the
 * `clients` given), rate limited when `options.rateLimits` says how.
 */
export async function testGateway(
  bus: MessageBus = createInProcessBroker().connect("gateway"),
  rpcTimeoutMs = 1000,
  options: AppOptions & {
    clients?: object[];
    clock?: Clock;
    publicUrl?: string;
    readCache?: ReadCache;
    consoleUrl?: string;
  } = {},
) {
  const dir = tempDir("gateway-key");
  const key = await loadSigningKey(`${dir.path}/key.json`);
  const issuer = "http://127.0.0.1:8080";
  const clock = options.clock ?? systemClock;
  const tokens = new TokenService(key, issuer, clock);
  const app = createApp(
    {
      bus,
      blobs: createFileBlobStore({ dir: `${dir.path}/blobs` }),
      logger: createLogger("gateway-test", "silent"),
      clock,
      rpcTimeoutMs,
      publicUrl: options.publicUrl ?? "http://127.0.0.1:8080",
      authorize: createAuthorizer(),
      readCache: options.readCache,
      consoleUrl: options.consoleUrl,
      auth: {
        tokens,
        operatorKeys: apiKeysSchema.parse(`${OPERATOR_KEY}:pro`),
        oauthClients: oauthClientsSchema.parse(
          JSON.stringify([
            {
              ...OPERATOR_CLIENT,
              scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
              plan: "enterprise",
            },
            ...(options.clients ?? []),
          ]),
        ),
        anonymousPlan: "free",
        issuer,
      },
    },
    options,
  );
  return { app, tokens, bus, cleanup: dir.remove };
}
