import type { Customer, CustomerFields } from "@cheese/contracts";
import { WrongExpectedRevisionError } from "@cheese/event-store";
import { RemoteError } from "@cheese/messaging";
import { contextMetadata, DomainError, handleCommand, type RequestContext } from "@cheese/service-kit";
import { type CustomerEvent, customerDecider, customerStream } from "../domain/customer.ts";
import { emailStream, type ReservedValue, usernameStream } from "../domain/reservation.ts";
import { hashPassword } from "../passwords.ts";
import type { PersonalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteFromInput } from "./favourite-cheese.ts";
import { ownedCustomer, release, reserve } from "./lookup.ts";
import { customerView } from "./view.ts";

export function registerCustomer(deps: CustomerDeps, fields: CustomerFields, context: RequestContext) {
  return hashPassword(fields.password).then((hash) => registerHashed(deps, fields, hash, context));
}

/**
 * Registers the elements in order (a duplicate of an earlier element fails with its index).
 * Passwords are hashed up front and in parallel, the slow part, so the batch meets its deadline.
 */
export async function registerBatch(
  deps: CustomerDeps,
  elements: { index: number; fields: CustomerFields }[],
  context: RequestContext,
) {
  const hashes = await Promise.all(elements.map((element) => hashPassword(element.fields.password)));
  const results: (
    | { index: number; customer: Customer }
    | { index: number; status: number; message: string }
  )[] = [];
  for (const [i, { index, fields }] of elements.entries()) {
    try {
      results.push({ index, customer: await registerHashed(deps, fields, hashes[i]!, context) });
    } catch (error) {
      // A refusal (409, 422) or an unavailable catalogue (503) fails this element only.
      if (!(error instanceof RemoteError)) throw error;
      const detail = error.body.errors?.map((e) => `${e.field}: ${e.message}`).join("; ");
      results.push({ index, status: error.body.status, message: detail || error.body.message });
    }
  }
  return { results };
}

/**
 * Reserve the username, then the email (409 when taken), then seal the personal data under a
 * new key and append CustomerRegistered. Anything failing after a reservation undoes it.
 */
async function registerHashed(
  deps: CustomerDeps,
  fields: CustomerFields,
  passwordHash: string,
  context: RequestContext,
): Promise<Customer> {
  const metadata = contextMetadata(context);
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  const customerId = await deps.customerIds.nextId();
  const emailKey = await deps.vault.emailKey(fields.email);
  const held: [ReservedValue, string][] = [];
  try {
    await reserve(deps.store, "username", usernameStream(fields.username), customerId, metadata);
    held.push(["username", usernameStream(fields.username)]);
    await reserve(deps.store, "email", emailStream(emailKey), customerId, metadata);
    held.push(["email", emailStream(emailKey)]);
    const personal = personalData(fields, passwordHash);
    const sealed = await deps.vault.seal(customerId, personal, { newCustomer: true });
    const result = await handleCommand(
      deps.store,
      customerStream(customerId),
      customerDecider,
      {
        type: "Register",
        customerId,
        username: fields.username,
        emailKey,
        personal: sealed,
        favouriteCheese: favourite.ref,
        at: new Date().toISOString(),
      },
      { metadata: metadata },
    );
    if (result.state.status !== "active") throw new Error("registration left no active customer");
    return customerView(deps, result.state.customer, context, {
      personal,
      favourite: favourite.cheese ?? (favourite.ref ? { name: favourite.ref.name } : undefined),
    });
  } catch (error) {
    for (const [what, stream] of held) await release(deps.store, what, stream, customerId, metadata);
    if (held.length === 2) await deps.vault.erase(customerId);
    throw error;
  }
}

/**
 * PUT: replaces the profile. A new username or email is reserved first and the old one released
 * after; the append expects the revision read, so a concurrent change makes this a 409.
 */
export async function replaceCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number; fields: CustomerFields },
  context: RequestContext,
): Promise<Customer> {
  const { fields } = request;
  const metadata = contextMetadata(context);
  const { customer, revision } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const { customerId } = customer;
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  const passwordHash = await hashPassword(fields.password);
  const emailKey = await deps.vault.emailKey(fields.email);
  const changes: { what: ReservedValue; from: string; to: string }[] = [];
  if (fields.username.toLowerCase() !== customer.username.toLowerCase()) {
    changes.push({
      what: "username",
      from: usernameStream(customer.username),
      to: usernameStream(fields.username),
    });
  }
  if (emailKey !== customer.emailKey) {
    changes.push({ what: "email", from: emailStream(customer.emailKey), to: emailStream(emailKey) });
  }
  const reserved: typeof changes = [];
  let events: CustomerEvent[];
  const personal = personalData(fields, passwordHash);
  try {
    for (const change of changes) {
      await reserve(deps.store, change.what, change.to, customerId, metadata);
      reserved.push(change);
    }
    events = customerDecider.decide(
      {
        type: "Replace",
        username: fields.username,
        emailKey,
        personal: await deps.vault.seal(customerId, personal),
        favouriteCheese: favourite.ref,
        at: new Date().toISOString(),
      },
      { status: "active", customer },
    );
    await deps.store.append(
      customerStream(customerId),
      events.map((event) => ({ ...event, metadata })),
      { expectedRevision: revision },
    );
  } catch (error) {
    for (const change of reserved) await release(deps.store, change.what, change.to, customerId, metadata);
    if (error instanceof WrongExpectedRevisionError) {
      throw new DomainError(409, "conflict", "the customer changed concurrently; read it again and retry");
    }
    throw error;
  }
  for (const change of changes) await release(deps.store, change.what, change.from, customerId, metadata);
  const state = events.reduce(customerDecider.evolve, { status: "active", customer } as const);
  if (state.status !== "active") throw new Error("replacement left no active customer");
  return customerView(deps, state.customer, context, {
    personal,
    favourite: favourite.cheese ?? (favourite.ref ? { name: favourite.ref.name } : undefined),
  });
}

/**
 * Erasure: CustomerDeleted (which also ends the API keys), the username and email released for
 * new registrations, and the personal-data key destroyed, after which no event can be read back
 * into a name, email or phone. The api_keys projection destroys the key again on replay, should
 * this process die between the append and the destroy.
 */
export async function deleteCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number },
  context: RequestContext,
): Promise<{ customerId: number; apiKeyIds: number[] }> {
  const metadata = contextMetadata(context);
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  const { customerId } = customer;
  const result = await handleCommand(
    deps.store,
    customerStream(customerId),
    customerDecider,
    { type: "Delete", at: new Date().toISOString() },
    { metadata: metadata },
  );
  const deleted = result.newEvents.find((event) => event.type === "CustomerDeleted");
  await release(deps.store, "username", usernameStream(customer.username), customerId, metadata);
  await release(deps.store, "email", emailStream(customer.emailKey), customerId, metadata);
  await deps.vault.erase(customerId);
  return { customerId, apiKeyIds: deleted?.type === "CustomerDeleted" ? deleted.data.apiKeyIds : [] };
}

function personalData(fields: CustomerFields, passwordHash: string): PersonalData {
  return {
    ...(fields.firstName !== undefined ? { firstName: fields.firstName } : {}),
    ...(fields.lastName !== undefined ? { lastName: fields.lastName } : {}),
    email: fields.email,
    phone: fields.phone,
    passwordHash,
  };
}
