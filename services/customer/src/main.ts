import { join } from "node:path";
import { customerRpc, historyRpc } from "@cheese/contracts";
import {
  IdAllocator,
  type ServiceDefinition,
  type StartOptions,
  serveRebuildRequests,
  serviceDataDir,
  startProjection,
  startPublisher,
  startService,
} from "@cheese/service-kit";
import { type CustomerConfig, customerConfigSchema } from "./config.ts";
import { expiryWarnings } from "./handlers/api-key-expiry.ts";
import { authenticateApiKey, createApiKey, listApiKeys, revokeApiKey } from "./handlers/api-keys.ts";
import { completeDeletion, deleteCustomer } from "./handlers/delete-customer.ts";
import type { CustomerDeps } from "./handlers/deps.ts";
import { catalogueLookup } from "./handlers/favourite-cheese.ts";
import { customerHistory, exportCustomer } from "./handlers/history.ts";
import { startIdentity } from "./handlers/identity/identity.ts";
import { loadSigningKey } from "./handlers/identity/signing-key.ts";
import { openPersonalData, sealPersonalData } from "./handlers/personal-data.ts";
import { getCustomer, login, principal } from "./handlers/queries.ts";
import { registerBatch, registerCustomer } from "./handlers/register-customer.ts";
import { replaceCustomer } from "./handlers/replace-customer.ts";
import { countDeliveredOrders } from "./handlers/tiers.ts";
import { toIntegrationEvent } from "./integration-events.ts";
import { PasswordChecker } from "./passwords.ts";
import { createFileKeyStore, type KeyStore } from "./personal-data/key-store.ts";
import { PersonalDataVault } from "./personal-data/vault.ts";
import { API_KEYS_VERSION, apiKeysCollection, projectApiKeys } from "./projections/api-keys.ts";

export const customerService: ServiceDefinition<CustomerConfig, CustomerDeps> = {
  name: "customer",
  configSchema: customerConfigSchema,
  needs: { eventStore: true, readModels: true },
  // The wiring of the service, production's and the tests' alike (startService runs it; what
  // it returns is `RunningService.wired`): projections, consumers, handlers' deps, RPCs.
  async start(ctx) {
    const { eventStore: store, readModels, logger, config, bus } = ctx;
    // Keys shared by every replica on every host: MongoDB in production, files on one host.
    let keyStore: KeyStore;
    if (config.MONGO_URL) {
      const database = `${config.MONGO_DATABASE}_customer_keys`;
      // Imported when chosen: the MongoDB driver is not loaded by the embedded setup.
      const { createMongoKeyStore } = await import("./personal-data/mongo-key-store.ts");
      const mongoKeys = await createMongoKeyStore({ url: config.MONGO_URL, database });
      ctx.onStop(mongoKeys);
      keyStore = mongoKeys;
    } else {
      keyStore = createFileKeyStore(join(serviceDataDir(config, "customer"), "keys"));
    }
    const vault = new PersonalDataVault(keyStore);
    const warnings = expiryWarnings({
      store,
      clock: ctx.clock,
      warnBeforeMs: config.API_KEY_EXPIRY_WARNING,
      logger,
    });
    ctx.onStop(warnings);
    // Completes every deletion it sees, so one cut short by a crash is finished on restart.
    const projectKeys = projectApiKeys((customerId) => completeDeletion({ store, vault }, customerId));
    let live = false;
    const apiKeys = await startProjection({
      name: "api_keys",
      version: API_KEYS_VERSION,
      collections: [apiKeysCollection],
      eventStore: store,
      readModels,
      categories: ["customer"],
      async apply(event, models) {
        await projectKeys(event, models);
        if (live) warnings.apply(event);
      },
      logger,
    });
    ctx.onStop(apiKeys);
    ctx.onStop(serveRebuildRequests(bus, "customer", { api_keys: apiKeys }, logger));
    await apiKeys.ready;
    live = true;
    await warnings.load(readModels);
    ctx.onStop(
      await startPublisher({
        service: "customer",
        eventStore: store,
        bus,
        categories: ["customer"],
        toIntegrationEvent,
        logger,
        leaseMs: ctx.config.RELAY_LEASE,
        clock: ctx.clock,
      }),
    );
    ctx.onStop(countDeliveredOrders(bus, store, logger));

    const passwords = new PasswordChecker();
    await passwords.warmUp();
    const accounts = { store, vault, passwords };
    // The OAuth 2.0 authorization server and issuer of session tokens (docs/identity.md).
    const identity = await startIdentity(
      {
        bus,
        logger,
        clock: ctx.clock,
        signingKey: await loadSigningKey(
          join(serviceDataDir(config, "customer"), "jwt-signing-key.json"),
          config.JWT_PRIVATE_KEY,
        ),
        clients: config.OAUTH_CLIENTS,
        codeTtlMs: config.OAUTH_CODE_TTL,
        accounts: {
          login: (username, password) => login(accounts, { username, password }),
          principal: (customerId) => principal(accounts, customerId),
        },
      },
      (definition, handler) => ctx.serve(definition, (request) => handler(request)),
    );
    ctx.onStop(identity);
    const deps: CustomerDeps = {
      store,
      clock: ctx.clock,
      customerIds: new IdAllocator(store, "customer"),
      apiKeyIds: new IdAllocator(store, "apikey"),
      vault,
      passwords,
      // Half the gateway's deadline, so a slow catalogue still leaves time to answer.
      cheeses: catalogueLookup(bus, Math.max(500, Math.floor(config.RPC_TIMEOUT / 2))),
      readModels,
      apiKeys,
      apiKeyLifetimeMs: config.API_KEY_LIFETIME,
      revocations: identity.revocations,
    };
    ctx.serve(customerRpc.register, async ({ fields }, context) => ({
      customer: await registerCustomer(deps, fields, context),
    }));
    ctx.serve(customerRpc.registerBatch, ({ elements }, context) => registerBatch(deps, elements, context));
    ctx.serve(customerRpc.get, async (request, context) => ({
      customer: await getCustomer(deps, request, context),
    }));
    ctx.serve(customerRpc.replace, deps, replaceCustomer);
    ctx.serve(customerRpc.delete, deps, deleteCustomer);
    ctx.serve(customerRpc.principal, ({ customerId }) => principal(deps, customerId));
    ctx.serve(customerRpc.createApiKey, deps, createApiKey);
    ctx.serve(customerRpc.listApiKeys, deps, listApiKeys);
    ctx.serve(customerRpc.revokeApiKey, deps, revokeApiKey);
    ctx.serve(customerRpc.authenticateApiKey, ({ keyHash }) => authenticateApiKey(deps, keyHash));
    ctx.serve(customerRpc.sealPersonalData, deps, sealPersonalData);
    ctx.serve(customerRpc.openPersonalData, deps, openPersonalData);
    ctx.serve(historyRpc.customer, deps, customerHistory);
    ctx.serve(customerRpc.export, async (request, context) => {
      const account = await exportCustomer(deps, request, context);
      return { ...account, oauthGrants: await identity.grantsOf(account.customer.id) };
    });
    return deps;
  },
};

export const start = (options?: StartOptions) => startService(customerService, options);
