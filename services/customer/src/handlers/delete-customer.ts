import type { EventMetadata } from "@cheese/event-store";
import {
  contextMetadata,
  foldEvents,
  forbidden,
  handleCommand,
  isoNow,
  notFound,
  type RequestContext,
} from "@cheese/service-kit";
import { customerDecider, customerStream } from "../domain/customer.ts";
import type { CustomerDeps } from "./deps.ts";
import { ownedCustomer } from "./lookup.ts";
import { releaseOldIdentity } from "./unique-values.ts";

/**
 * DELETE /customer/{username} (erasure): the account's password checked again (403 when wrong),
 * then CustomerDeleted (which ends the API keys, and from which the gateway revokes every session
 * and key of the customer), then what follows from it.
 */
export async function deleteCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number; currentPassword: string },
  context: RequestContext,
): Promise<{ customerId: number }> {
  const metadata = contextMetadata(context);
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const { customerId } = customer;
  const opened = await deps.vault.open(customerId, customer.personal);
  // Its key destroyed since the read: a deletion of this customer is under way, so it is gone.
  if (!opened) throw notFound(`customer ${request.username} not found`);
  if (!(await deps.passwords.verify(opened.passwordHash, request.currentPassword))) {
    throw forbidden("currentPassword is not this account's password");
  }
  await handleCommand(
    deps.store,
    customerStream(customerId),
    customerDecider,
    { type: "Delete", at: isoNow(deps.clock) },
    { metadata },
  );
  await completeDeletion(deps, customerId, metadata);
  return { customerId };
}

/**
 * What follows a CustomerDeleted: the username and email given back for new registrations, and
 * the personal-data key destroyed, after which no event can be read back into a name, email,
 * phone or shipping address. Idempotent: the api_keys projection runs it again for every
 * CustomerDeleted it applies, so a process that died between the deletion and these steps has
 * them completed when it (or any replica) starts again.
 */
export async function completeDeletion(
  deps: Pick<CustomerDeps, "store" | "vault">,
  customerId: number,
  metadata: EventMetadata = {},
): Promise<void> {
  const events = await deps.store.readStream(customerStream(customerId));
  const deleted = events.findIndex((event) => event.type === "CustomerDeleted");
  if (deleted === -1) return;
  const before = foldEvents(customerDecider, events.slice(0, deleted));
  const after = foldEvents(customerDecider, events.slice(0, deleted + 1));
  await releaseOldIdentity(deps, { before, after }, metadata);
  await deps.vault.erase(customerId);
}
