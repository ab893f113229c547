import type { Customer, CustomerFields } from "@cheese/contracts";
import { contextMetadata, handleCommand, isoNow, type RequestContext } from "@cheese/service-kit";
import { activeCustomer, customerDecider, customerStream } from "../domain/customer.ts";
import { hashPassword } from "../passwords.ts";
import { personalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteFromInput } from "./favourite-cheese.ts";
import { ownedCustomer } from "./lookup.ts";
import { releaseOldIdentity, reserveNewIdentity } from "./unique-values.ts";
import { customerView } from "./view.ts";

/**
 * PUT /customer/{username}: find the account (a customer only its own), resolve the favourite
 * cheese, hash the password, replace the profile; a new username or email is reserved before the
 * write (409 when taken) and the old one given back after. Answers the customer.
 */
export async function replaceCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number; fields: CustomerFields },
  context: RequestContext,
): Promise<Customer> {
  const { fields } = request;
  const metadata = contextMetadata(context);
  const { customerId } = (await ownedCustomer(deps.store, request.username, request.asCustomer)).customer;
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  const personal = personalData(fields, await hashPassword(fields.password));
  const change = await handleCommand(
    deps.store,
    customerStream(customerId),
    customerDecider,
    {
      type: "Replace",
      username: fields.username,
      emailKey: await deps.vault.emailKey(fields.email),
      personal: await deps.vault.seal(customerId, personal),
      favouriteCheese: favourite.ref,
      at: isoNow(deps.clock),
    },
    { metadata, beforeAppend: (decided) => reserveNewIdentity(deps, decided, metadata) },
  );
  await releaseOldIdentity(deps, { before: change.before, after: change.state }, metadata);
  return customerView(deps, activeCustomer(change.state), context, { personal, favourite: favourite.shown });
}
