import type { CustomerHistoryEntry } from "@cheese/contracts";
import { type HistoryPage, readHistory } from "@cheese/service-kit";
import { type CustomerEvent, customerStream } from "../domain/customer.ts";
import { customerHistoryEntry, type OpenedProfile } from "../domain/customer-history.ts";
import type { CustomerDeps } from "./deps.ts";
import { ownedCustomer } from "./lookup.ts";

/**
 * GET /customer/{username}/history: the customer's own account events, with the personal data
 * each change recorded, opened with their key. Someone else's name is 403, as for the account.
 */
export async function customerHistory(
  deps: Pick<CustomerDeps, "store" | "vault">,
  request: { username: string; asCustomer: number; cursor?: string | undefined; limit: number },
): Promise<HistoryPage<CustomerHistoryEntry>> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const { customerId } = customer;
  return readHistory(deps.store, customerStream(customerId), request, async (event) => {
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
  });
}
