import { contextMetadata, handleCommand, isoNow, type RequestContext } from "@cheese/service-kit";
import { customerDecider, customerStream } from "../domain/customer.ts";
import type { CustomerDeps } from "./deps.ts";
import { ownedCustomer } from "./lookup.ts";
import { releaseOldIdentity } from "./unique-values.ts";

/**
 * DELETE /customer/{username} (erasure): CustomerDeleted (which ends the API keys, and from which
 * the gateway revokes every session and key of the customer), the username and email given back
 * for new registrations, and the personal-data key destroyed, after which no event can be read
 * back into a name, email or phone. The api_keys projection destroys the key again on replay,
 * should this process die between the append and the destroy.
 */
export async function deleteCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number },
  context: RequestContext,
): Promise<{ customerId: number }> {
  const metadata = contextMetadata(context);
  const { customerId } = (await ownedCustomer(deps.store, request.username, request.asCustomer)).customer;
  const deletion = await handleCommand(
    deps.store,
    customerStream(customerId),
    customerDecider,
    { type: "Delete", at: isoNow(deps.clock) },
    { metadata },
  );
  await releaseOldIdentity(deps, { before: deletion.before, after: deletion.state }, metadata);
  await deps.vault.erase(customerId);
  return { customerId };
}
