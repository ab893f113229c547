import {
  type Customer,
  type CustomerBatchResult,
  type CustomerFields,
  CustomerInput,
  fieldErrors,
  toCustomerFields,
} from "@cheese/contracts";
import { RemoteError } from "@cheese/messaging";
import { contextMetadata, handleCommand, isoNow, type RequestContext } from "@cheese/service-kit";
import { activeCustomer, customerDecider, customerStream } from "../domain/customer.ts";
import { hashPassword } from "../passwords.ts";
import { personalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteFromInput } from "./favourite-cheese.ts";
import { releaseIdentity, reserveIdentity } from "./unique-values.ts";
import { customerView } from "./view.ts";

/**
 * POST /customer: hash the password, resolve the favourite cheese, take a new id, reserve the
 * username and the email (409 when taken), seal the personal data under a new key, register,
 * answer the customer. Anything failing after the reservations undoes them.
 */
export async function registerCustomer(
  deps: CustomerDeps,
  fields: CustomerFields,
  context: RequestContext,
): Promise<Customer> {
  return register(deps, fields, await hashPassword(fields.password), context);
}

/**
 * POST /customer/createMultiple: each element validated and registered on its own, in order
 * (a duplicate of an earlier element fails with its index); partial success is possible.
 * Passwords are hashed up front and in parallel, the slow part.
 */
export async function registerBatch(
  deps: CustomerDeps,
  elements: readonly unknown[],
  context: RequestContext,
): Promise<CustomerBatchResult> {
  const created: Customer[] = [];
  const errors: CustomerBatchResult["errors"] = [];
  const valid: { index: number; fields: CustomerFields }[] = [];
  elements.forEach((element, index) => {
    const parsed = CustomerInput.safeParse(element);
    if (parsed.success) valid.push({ index, fields: toCustomerFields(parsed.data) });
    else errors.push({ index, message: describe(fieldErrors(parsed.error.issues)) });
  });
  const hashes = await Promise.all(valid.map((element) => hashPassword(element.fields.password)));
  for (const [i, { index, fields }] of valid.entries()) {
    try {
      created.push(await register(deps, fields, hashes[i]!, context));
    } catch (error) {
      // A refusal (409, 422) or an unavailable catalogue (503) fails this element only.
      if (!(error instanceof RemoteError)) throw error;
      errors.push({ index, message: describe(error.body.errors ?? []) || error.body.message });
    }
  }
  return { created, errors: errors.sort((a, b) => a.index - b.index) };
}

async function register(
  deps: CustomerDeps,
  fields: CustomerFields,
  passwordHash: string,
  context: RequestContext,
): Promise<Customer> {
  const metadata = contextMetadata(context);
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  const customerId = await deps.customerIds.nextId();
  const identity = {
    customerId,
    username: fields.username,
    emailKey: await deps.vault.emailKey(fields.email),
  };
  const personal = personalData(fields, passwordHash);
  try {
    await reserveIdentity(deps, identity, metadata);
    const { state } = await handleCommand(
      deps.store,
      customerStream(customerId),
      customerDecider,
      {
        type: "Register",
        ...identity,
        personal: await deps.vault.seal(customerId, personal, { newCustomer: true }),
        favouriteCheese: favourite.ref,
        at: isoNow(deps.clock),
      },
      { metadata },
    );
    return customerView(deps, activeCustomer(state), context, { personal, favourite: favourite.shown });
  } catch (error) {
    await releaseIdentity(deps, identity, metadata);
    await deps.vault.erase(customerId);
    throw error;
  }
}

const describe = (errors: { field: string; message: string }[]) =>
  errors.map((e) => `${e.field}: ${e.message}`).join("; ");
