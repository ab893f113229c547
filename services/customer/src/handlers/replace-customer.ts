import type { Customer, CustomerFields } from "@cheese/contracts";
import { contextMetadata, handleCommand, isoNow, notFound, type RequestContext } from "@cheese/service-kit";
import { activeCustomer, customerDecider, customerStream } from "../domain/customer.ts";
import { hashPassword } from "../passwords.ts";
import { personalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteFromInput } from "./favourite-cheese.ts";
import { ownedCustomer } from "./lookup.ts";
import { releaseOldIdentity, reserveNewIdentity } from "./unique-values.ts";
import { customerView } from "./view.ts";

export interface ReplaceRequest {
  username: string;
  asCustomer: number;
  fields: CustomerFields;
  /** Needed to change the password or the email. */
  currentPassword?: string | undefined;
  /** The session (token id) making the change: it goes on working after a password change. */
  session?: string | null | undefined;
}

/**
 * PUT /customer/{username}: find the account (a customer only its own), check the passwords
 * against the stored hash (is the password new? is the current one right?), resolve the
 * favourite cheese, replace the profile; a new username or email is reserved before the write
 * (409 when taken) and the old one given back after. Answers the customer and, after a password
 * change, the new password version (the gateway ends older credentials from the event).
 */
export async function replaceCustomer(
  deps: CustomerDeps,
  request: ReplaceRequest,
  context: RequestContext,
): Promise<{ customer: Customer; passwordVersion: number | null }> {
  const { fields } = request;
  const metadata = contextMetadata(context);
  const { customer: current } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const { customerId } = current;
  const opened = await deps.vault.open(customerId, current.personal);
  // Its key destroyed since the read: a deletion of this customer is under way, so it is gone.
  if (!opened) throw notFound(`customer ${request.username} not found`);
  const stored = opened.passwordHash;
  const passwordChanged = !(await deps.passwords.verify(stored, fields.password));
  const currentPassword =
    request.currentPassword === undefined
      ? ("absent" as const)
      : (await deps.passwords.verify(stored, request.currentPassword))
        ? ("right" as const)
        : ("wrong" as const);
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  // An unchanged password keeps its hash: re-hashing it would change nothing but the salt.
  const passwordHash = passwordChanged || !stored ? await hashPassword(fields.password) : stored;
  const personal = personalData(fields, passwordHash);
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
      passwordChanged,
      currentPassword,
      checkedVersion: current.passwordVersion,
      session: request.session ?? null,
    },
    { metadata, alongside: (decided) => reserveNewIdentity(deps, decided, metadata) },
  );
  await releaseOldIdentity(deps, { before: change.before, after: change.state }, metadata);
  const after = activeCustomer(change.state);
  return {
    customer: await customerView(deps, after, context, { personal, favourite: favourite.shown }),
    passwordVersion: passwordChanged ? after.passwordVersion : null,
  };
}
