import {
  type Customer,
  type CustomerHistoryEntry,
  type ExportedApiKey,
  planForStatus,
} from "@cheese/contracts";
import type { RecordedEvent } from "@cheese/event-store";
import { type HistoryPage, type RequestContext, readHistory } from "@cheese/service-kit";
import { type CustomerEvent, customerStream } from "../domain/customer.ts";
import { customerHistoryEntry, type OpenedProfile } from "../domain/customer-history.ts";
import type { CustomerDeps } from "./deps.ts";
import { ownedCustomer } from "./lookup.ts";
import { customerView } from "./view.ts";

/**
 * GET /customer/{username}/history: the customer's own account events, with the personal data
 * each change recorded, opened with their key. Someone else's name is 403, as for the account.
 */
export async function customerHistory(
  deps: Pick<CustomerDeps, "store" | "vault">,
  request: { username: string; asCustomer: number; cursor?: string | undefined; limit: number },
): Promise<HistoryPage<CustomerHistoryEntry>> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  return readHistory(deps.store, customerStream(customer.customerId), request, (event) =>
    historyEntry(deps, customer.customerId, event),
  );
}

/** One stored event of the account as its history shows it, or undefined when it shows none. */
async function historyEntry(
  deps: Pick<CustomerDeps, "vault">,
  customerId: number,
  event: RecordedEvent,
): Promise<CustomerHistoryEntry | undefined> {
  const domainEvent = { type: event.type, data: event.data } as CustomerEvent;
  const sealed = (domainEvent.data as { personal?: string }).personal;
  const opened = sealed === undefined ? undefined : await deps.vault.open(customerId, sealed);
  const personal: OpenedProfile | undefined = opened && {
    ...(opened.firstName !== undefined ? { firstName: opened.firstName } : {}),
    ...(opened.lastName !== undefined ? { lastName: opened.lastName } : {}),
    email: opened.email,
    phone: opened.phone,
  };
  const entry = customerHistoryEntry(domainEvent, personal);
  return entry && { ...entry, at: event.createdAt };
}

/**
 * GET /customer/{username}/export, the customer service's part (docs/identity.md "Data
 * portability"): the account as it reads now, every API key it was issued (revoked ones too;
 * never a key or its hash) and its whole history. The customer themself or an operator
 * (`asCustomer` null); an erased account is 404, as it is to every read.
 */
export async function exportCustomer(
  deps: Pick<CustomerDeps, "store" | "vault" | "cheeses">,
  request: { username: string; asCustomer: number | null },
  context: RequestContext,
): Promise<{ customer: Customer; apiKeys: ExportedApiKey[]; history: CustomerHistoryEntry[] }> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const account = await customerView(deps, customer, context);
  const plan = planForStatus(customer.customerStatus);
  const apiKeys = customer.apiKeys.map((key) => ({
    id: key.keyId,
    prefix: key.prefix,
    plan,
    createdAt: key.createdAt,
    expiresAt: key.expiresAt,
    revoked: key.revoked,
  }));
  const history: CustomerHistoryEntry[] = [];
  for (const event of await deps.store.readStream(customerStream(customer.customerId))) {
    const entry = await historyEntry(deps, customer.customerId, event);
    if (entry) history.push(entry);
  }
  return { customer: account, apiKeys, history };
}
