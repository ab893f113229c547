import type { EventMetadata } from "@cheese/event-store";
import { releaseUnique, reserveUnique, type UniqueValue } from "@cheese/service-kit";
import { type CustomerState, emailStream, IDENTITY_TAKEN, usernameStream } from "../domain/customer.ts";
import type { CustomerDeps } from "./deps.ts";
import { loadCustomer } from "./lookup.ts";

/** What a customer holds as unique: its username and (the keyed hash of) its email. */
interface Identity {
  customerId: number;
  username: string;
  emailKey: string;
}

/** The customer's username and email as unique values, in the order they are reserved. */
function uniqueValues(deps: Pick<CustomerDeps, "store">, identity: Identity): UniqueValue[] {
  const holds = (stream: string) => async (holder: number) => {
    const loaded = await loadCustomer(deps.store, holder);
    if (!loaded) return false;
    const { username, emailKey } = loaded.customer;
    return usernameStream(username) === stream || emailStream(emailKey) === stream;
  };
  const username = usernameStream(identity.username);
  const email = emailStream(identity.emailKey);
  return [
    {
      stream: username,
      holder: identity.customerId,
      whenTaken: IDENTITY_TAKEN,
      holds: holds(username),
    },
    { stream: email, holder: identity.customerId, whenTaken: IDENTITY_TAKEN, holds: holds(email) },
  ];
}

/** Reserves the username, then the email (409 when either is someone else's). */
export async function reserveIdentity(
  deps: CustomerDeps,
  identity: Identity,
  metadata: EventMetadata,
): Promise<void> {
  for (const value of uniqueValues(deps, identity)) await reserveUnique(deps, value, metadata);
}

/** Gives back whichever of the customer's username and email it holds. */
export async function releaseIdentity(
  deps: CustomerDeps,
  identity: Identity,
  metadata: EventMetadata,
): Promise<void> {
  for (const value of uniqueValues(deps, identity)) await releaseUnique(deps, value, metadata);
}

/** `beforeAppend` of a profile change: a new username or email is reserved first. */
export async function reserveNewIdentity(
  deps: CustomerDeps,
  change: { before: CustomerState; after: CustomerState },
  metadata: EventMetadata,
): Promise<void> {
  const { before, after } = change;
  if (after.status !== "active") return;
  for (const value of uniqueValues(deps, after.customer)) {
    const had =
      before.status === "active" &&
      uniqueValues(deps, before.customer).some((old) => old.stream === value.stream);
    if (!had) await reserveUnique(deps, value, metadata);
  }
}

/** After a change: the username or email the customer no longer has is given back. */
export async function releaseOldIdentity(
  deps: Pick<CustomerDeps, "store">,
  change: { before: CustomerState; after: CustomerState },
  metadata: EventMetadata,
): Promise<void> {
  const { before, after } = change;
  if (before.status !== "active") return;
  const kept =
    after.status === "active" ? uniqueValues(deps, after.customer).map((value) => value.stream) : [];
  for (const value of uniqueValues(deps, before.customer)) {
    if (!kept.includes(value.stream)) await releaseUnique(deps, value, metadata);
  }
}
