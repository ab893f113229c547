import { defineRpc } from "@cheese/messaging";
import { z } from "zod";
import { ratePlans } from "../config.ts";
import {
  ApiKeySummary,
  Customer,
  CustomerBatchResult,
  CustomerFields,
  CustomerStatus,
  ExportedApiKey,
  IssuedApiKey,
  MAX_BATCH,
} from "../customer.ts";
import { CustomerHistoryEntry } from "../history.ts";
import { OAuthGrant } from "../identity.ts";

const customerId = z.number().int().positive();

/**
 * Whose rights a request carries: a customer id (who may touch only itself; anything else is 403,
 * existing or not) or null for an operator (may read anyone). The gateway decides who the caller
 * is; the customer service, which knows the id behind a username, checks ownership.
 */
const asCustomer = customerId.nullable();

/** What other services keep sealed under a customer's key. */
const PersonalDataPurpose = z.enum(["order"]);

/** Who a credential belongs to, for tokens, rate plans and ownership checks. */
export const CustomerPrincipal = z.object({
  customerId,
  username: z.string(),
  customerStatus: CustomerStatus,
  plan: z.enum(ratePlans),
  /** Tokens carry it; a password change revokes those issued under an older version. */
  passwordVersion: z.number().int().min(0),
});
export type CustomerPrincipal = z.infer<typeof CustomerPrincipal>;

export const customerRpc = {
  register: defineRpc({
    subject: "customer.customer.register",
    request: z.object({ fields: CustomerFields }),
    response: z.object({ customer: Customer }),
  }),
  /**
   * Each element (as the client sent it) is validated and registered on its own, in order, so a
   * duplicate of an earlier element fails with its index. The ordinary deadline: the elements
   * it cannot start in time are errors at their index.
   */
  registerBatch: defineRpc({
    subject: "customer.customer.register_batch",
    request: z.object({ elements: z.array(z.unknown()).max(MAX_BATCH) }),
    response: CustomerBatchResult,
  }),
  get: defineRpc({
    subject: "customer.customer.get",
    request: z.object({ username: z.string(), asCustomer }),
    response: z.object({ customer: Customer }),
  }),
  /**
   * Changing the password or email needs `currentPassword`. After a password change the answer
   * carries the new `passwordVersion` (null otherwise): the gateway ends every credential issued
   * under an older one but `session`, from the customer.password_changed it causes.
   */
  replace: defineRpc({
    subject: "customer.customer.replace",
    request: z.object({
      username: z.string(),
      asCustomer: customerId,
      fields: CustomerFields,
      currentPassword: z.string().optional(),
      session: z.string().nullable().optional(),
    }),
    response: z.object({ customer: Customer, passwordVersion: z.number().int().min(1).nullable() }),
  }),
  /**
   * GET /customer/{username}/export, the account's part: the account, its API keys (revoked ones
   * too) and its whole event history with the personal data each change recorded. The customer
   * themself or an operator (`asCustomer` null); 404 once erased.
   */
  export: defineRpc({
    subject: "customer.customer.export",
    request: z.object({ username: z.string(), asCustomer }),
    response: z.object({
      customer: Customer,
      apiKeys: z.array(ExportedApiKey),
      oauthGrants: z.array(OAuthGrant),
      history: z.array(CustomerHistoryEntry),
    }),
  }),
  /** Erases the account; its sessions and keys are revoked from the customer.deleted it causes. */
  delete: defineRpc({
    subject: "customer.customer.delete",
    request: z.object({ username: z.string(), asCustomer: customerId, currentPassword: z.string() }),
    response: z.object({ customerId }),
  }),
  /** The current username, status and plan of a customer; 404 once deleted. */
  principal: defineRpc({
    subject: "customer.customer.principal",
    request: z.object({ customerId }),
    response: CustomerPrincipal,
  }),
  createApiKey: defineRpc({
    subject: "customer.api_key.create",
    request: z.object({ username: z.string(), asCustomer: customerId }),
    response: IssuedApiKey,
  }),
  listApiKeys: defineRpc({
    subject: "customer.api_key.list",
    request: z.object({ username: z.string(), asCustomer: customerId }),
    response: z.object({ keys: z.array(ApiKeySummary) }),
  }),
  revokeApiKey: defineRpc({
    subject: "customer.api_key.revoke",
    request: z.object({ username: z.string(), asCustomer: customerId, keyId: z.number().int().positive() }),
    response: z.object({ keyId: z.number().int().positive() }),
  }),
  /**
   * Personal data other services keep for a customer (ordering: shipping addresses and notes),
   * sealed under the customer's own key, so erasing the customer erases it too
   * (crypto-shredding). `purpose` is bound into the seal: a blob sealed for one purpose cannot
   * be opened as another. 404 once the customer is erased.
   */
  sealPersonalData: defineRpc({
    subject: "customer.personal_data.seal",
    request: z.object({ customerId, purpose: PersonalDataPurpose, data: z.record(z.string(), z.unknown()) }),
    response: z.object({ sealed: z.string() }),
  }),
  /** Opens sealed blobs, in order; null for each whose customer is erased (or that is not theirs). */
  openPersonalData: defineRpc({
    subject: "customer.personal_data.open",
    request: z.object({
      purpose: PersonalDataPurpose,
      items: z.array(z.object({ customerId, sealed: z.string() })).max(1000),
    }),
    response: z.object({ items: z.array(z.record(z.string(), z.unknown()).nullable()) }),
  }),
  /** Looks a presented key up by its `apiKeyHash`; 401 when unknown, revoked or expired. */
  authenticateApiKey: defineRpc({
    subject: "customer.api_key.authenticate",
    request: z.object({ keyHash: z.string().regex(/^[0-9a-f]{64}$/) }),
    response: CustomerPrincipal.extend({
      keyId: z.number().int().positive(),
      createdAt: z.string(),
      expiresAt: z.string(),
    }),
  }),
};
