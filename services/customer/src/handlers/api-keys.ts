import { randomBytes } from "node:crypto";
import {
  type ApiKeySummary,
  apiKeyHash,
  CUSTOMER_API_KEY_PREFIX,
  type IssuedApiKey,
  planForStatus,
} from "@cheese/contracts";
import {
  contextMetadata,
  handleCommand,
  isoNow,
  type RequestContext,
  unauthorized,
} from "@cheese/service-kit";
import { type ApiKeyRecord, type CustomerData, customerDecider, customerStream } from "../domain/customer.ts";
import { API_KEYS, type ApiKeyDocument } from "../projections/api-keys.ts";
import type { CustomerDeps } from "./deps.ts";
import { loadCustomer, ownedCustomer } from "./lookup.ts";
import { principalOf } from "./queries.ts";

/** Characters of the key shown in listings, enough to tell keys apart, useless to an attacker. */
const SHOWN_CHARACTERS = 12;

/** Issues a key: 256 random bits, returned once, stored only as its `apiKeyHash`. */
export async function createApiKey(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number },
  context: RequestContext,
): Promise<IssuedApiKey> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const key = `${CUSTOMER_API_KEY_PREFIX}${randomBytes(32).toString("base64url")}`;
  const keyId = await deps.apiKeyIds.nextId();
  const now = deps.clock.now().getTime();
  const record = {
    keyId,
    keyHash: apiKeyHash(key),
    prefix: key.slice(0, SHOWN_CHARACTERS),
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + deps.apiKeyLifetimeMs).toISOString(),
  };
  await handleCommand(
    deps.store,
    customerStream(customer.customerId),
    customerDecider,
    { type: "IssueApiKey", ...record },
    { metadata: contextMetadata(context) },
  );
  return { ...summary(customer, { ...record, revoked: false, warned: false }), key };
}

export async function listApiKeys(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number },
): Promise<{ keys: ApiKeySummary[] }> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  return { keys: customer.apiKeys.filter((key) => !key.revoked).map((key) => summary(customer, key)) };
}

export async function revokeApiKey(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number; keyId: number },
  context: RequestContext,
): Promise<{ keyId: number }> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  await handleCommand(
    deps.store,
    customerStream(customer.customerId),
    customerDecider,
    { type: "RevokeApiKey", keyId: request.keyId, at: isoNow(deps.clock) },
    { metadata: contextMetadata(context) },
  );
  // Refused on every gateway within milliseconds, not when their caches of the key run out.
  await deps.revocations.revokeApiKey(request.keyId);
  return { keyId: request.keyId };
}

/** Who a presented key belongs to; 401 when unknown, revoked, expired or its customer is gone. */
export async function authenticateApiKey(deps: CustomerDeps, keyHash: string) {
  await deps.apiKeys.catchUp();
  const document = await deps.readModels.collection<ApiKeyDocument>(API_KEYS).findOne({ keyHash });
  if (!document || document.revoked) throw unauthorized("unknown API key");
  if (Date.parse(document.expiresAt) <= deps.clock.now().getTime()) throw unauthorized("API key expired");
  const loaded = await loadCustomer(deps.store, document.customerId);
  const key = loaded?.customer.apiKeys.find((k) => k.keyId === document._id);
  if (!loaded || !key || key.revoked) throw unauthorized("unknown API key");
  return {
    ...principalOf(loaded.customer),
    keyId: key.keyId,
    createdAt: key.createdAt,
    expiresAt: key.expiresAt,
  };
}

function summary(customer: CustomerData, key: ApiKeyRecord): ApiKeySummary {
  return {
    id: key.keyId,
    prefix: key.prefix,
    plan: planForStatus(customer.customerStatus),
    createdAt: key.createdAt,
    expiresAt: key.expiresAt,
  };
}
