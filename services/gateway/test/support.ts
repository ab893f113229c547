import { createFileBlobStore } from "@cheese/blob-store";
import type { ReadCache } from "@cheese/catalogue/read-cache";
import { oauthClientsSchema } from "@cheese/contracts";
import { createInProcessBroker, type MessageBus } from "@cheese/messaging";
import { type Clock, createLogger, systemClock } from "@cheese/service-kit";
import { fakeIdentity, TokenSigner } from "@cheese/service-testing/stand-ins";
import { tempDir } from "@cheese/testing";
import type { AppOptions } from "../src/app.ts";
import { createApp } from "../src/app.ts";
import { apiKeysSchema } from "../src/auth/credentials.ts";
import type { GatewayDeps } from "../src/deps.ts";

export const OPERATOR_KEY = "test-operator-key";
export const OPERATOR_CLIENT = { id: "ops", secret: "ops-secret" };
/** One signing key for every identity stand-in of the test file, so replicas verify each other's tokens. */
const SIGNER = new TokenSigner();

/**
 * A gateway app over the given bus, with one operator key and one confidential client (and the
 * `clients` given), rate limited when `options.rateLimits` says how. The customer service's
 * authorization server is stood in for (`fakeIdentity`): the gateway verifies the tokens `tokens`
 * issues against its key; its OAuth endpoints are driven through the gateway in `e2e/`.
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
    /** False: the revocations bucket is not made (a customer service not started yet). */
    revocations?: boolean;
    /** Told of the checks the app adds to its process's health port. */
    addCheck?: GatewayDeps["addCheck"];
  } = {},
) {
  const dir = tempDir("gateway");
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
  const identity = await fakeIdentity(bus, issuer, SIGNER.at(clock), {
    revocations: options.revocations ?? true,
  });
  const app = createApp(
    {
      bus,
      blobs: createFileBlobStore({ dir: `${dir.path}/blobs` }),
      logger: createLogger("gateway-test", "silent"),
      clock,
      rpcTimeoutMs,
      publicUrl: options.publicUrl ?? "http://127.0.0.1:8080",
      readCache: options.readCache,
      consoleUrl: options.consoleUrl,
      addCheck: options.addCheck,
      auth: {
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
    tokens: identity,
    bus,
    cleanup: async () => {
      await identity.close();
      dir.remove();
    },
  };
}
