import { generateKeyPairSync } from "node:crypto";
import { createFileBlobStore } from "@cheese/blob-store";
import { type CustomerPrincipal, oauthClientsSchema, type TokenClaims } from "@cheese/contracts";
import { loadSigningKey, startIdentity } from "@cheese/customer/identity";
import { createInProcessBroker, type MessageBus, RemoteError, serveRpc } from "@cheese/messaging";
import { type Clock, createLogger, systemClock } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import type { AppOptions } from "../src/app.ts";
import { createApp } from "../src/app.ts";
import { createAuthorizer } from "../src/auth/authorize.ts";
import { apiKeysSchema } from "../src/auth/credentials.ts";
import { TokenVerifier } from "../src/auth/tokens.ts";
import type { ReadCache } from "../src/read-cache.ts";

export const OPERATOR_KEY = "test-operator-key";
/** One signing key for every identity stand-in of the test file, so replicas verify each other's tokens. */
const SIGNING_KEY = JSON.stringify(generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" }));
export const OPERATOR_CLIENT = { id: "ops", secret: "ops-secret" };

/**
 * A gateway app over the given bus, with one operator key and one confidential client (and the
 * `clients` given), rate limited when `options.rateLimits` says how. The customer service's
 * authorization server stands behind it (its own code, over the same bus, with no accounts: no
 * password is right, and every customer id is `customer<id>` on the free plan), and `tokens`
 * issues tokens as it does.
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
  const issuer = "http://127.0.0.1:8080";
  const clock = options.clock ?? systemClock;
  const oauthClients = oauthClientsSchema.parse(
    JSON.stringify([
      {
        ...OPERATOR_CLIENT,
        scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
        plan: "enterprise",
      },
      ...(options.clients ?? []),
    ]),
  );
  const identity = await startIdentity(
    {
      bus: bus,
      logger: createLogger("identity-test", "silent"),
      clock,
      signingKey: await loadSigningKey(`${dir.path}/key.json`, SIGNING_KEY),
      clients: oauthClients,
      codeTtlMs: 60_000,
      accounts: {
        login: async () => {
          throw new RemoteError({
            status: 401,
            type: "unauthorized",
            message: "invalid username or password",
          });
        },
        principal: async (customerId): Promise<CustomerPrincipal> => ({
          customerId,
          username: `customer${customerId}`,
          customerStatus: "bronze",
          plan: "free",
          passwordVersion: 0,
        }),
      },
    },
    (definition, handler) => void serveRpc(bus, definition, { queue: "customer" }, handler),
  );
  const tokens = {
    issue: (claims: Omit<TokenClaims, "jti" | "iat" | "exp">, ttlSeconds: number) =>
      identity.tokens.issue(claims, ttlSeconds, issuer),
  };
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
        tokens: new TokenVerifier(bus, issuer, rpcTimeoutMs, clock),
        operatorKeys: apiKeysSchema.parse(`${OPERATOR_KEY}:pro`),
        oauthClients,
        anonymousPlan: "free",
        issuer,
      },
    },
    options,
  );
  return {
    app,
    tokens,
    bus,
    cleanup: async () => {
      await identity.close();
      dir.remove();
    },
  };
}
