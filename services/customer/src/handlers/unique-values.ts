import type { EventMetadata } from "@cheese/event-store";
import {
  type AlongsideWrite,
  type Holders,
  releaseUnique,
  reserveUnique,
  type UniqueValue,
} from "@cheese/service-kit";
import {
  type CustomerEvent,
  type CustomerState,
  customerDecider,
  customerStream,
  emailStream,
  IDENTITY_TAKEN,
  usernameStream,
} from "../domain/customer.ts";
import type { CustomerDeps } from "./deps.ts";

/** What a customer holds as unique: its username and (the keyed hash of) its email. */
interface Identity {
  customerId: number;
  username: string;
  emailKey: string;
}

/** The customer's username and email as unique values, in the order they are reserved. */
function uniqueValues(identity: Identity): UniqueValue<CustomerState, CustomerEvent>[] {
  const holder = identity.customerId;
  return [usernameStream(identity.username), emailStream(identity.emailKey)].map((stream) => ({
    stream,
    holder,
    whenTaken: IDENTITY_TAKEN,
    heldBy: customers,
  }));
}

/** A customer, as the holder of its username and email. */
const customers: Holders<CustomerState, CustomerEvent> = {
  stream: customerStream,
  decider: customerDecider,
  values: (state) =>
    state.status === "active"
      ? [usernameStream(state.customer.username), emailStream(state.customer.emailKey)]
      : [],
};

/**
 * The username's and the email's reservations, written alongside the registration (409 when
 * either is someone else's).
 */
export function reserveIdentity(
  deps: CustomerDeps,
  identity: Identity,
  metadata: EventMetadata,
): AlongsideWrite[] {
  return uniqueValues(identity).map((value) => reserveUnique(deps, value, metadata));
}

/** Gives back whichever of the customer's username and email it holds. */
export async function releaseIdentity(
  deps: CustomerDeps,
  identity: Identity,
  metadata: EventMetadata,
): Promise<void> {
  for (const value of uniqueValues(identity)) await releaseUnique(deps, value, metadata);
}

/** `alongside` of a profile change: a new username or email is reserved with the change. */
export function reserveNewIdentity(
  deps: CustomerDeps,
  change: { before: CustomerState; after: CustomerState },
  metadata: EventMetadata,
): AlongsideWrite[] {
  const { before, after } = change;
  if (after.status !== "active") return [];
  const had = before.status === "active" ? uniqueValues(before.customer).map((old) => old.stream) : [];
  return uniqueValues(after.customer)
    .filter((value) => !had.includes(value.stream))
    .map((value) => reserveUnique(deps, value, metadata));
}

/** After a change: the username or email the customer no longer has is given back. */
export async function releaseOldIdentity(
  deps: Pick<CustomerDeps, "store">,
  change: { before: CustomerState; after: CustomerState },
  metadata: EventMetadata,
): Promise<void> {
  const { before, after } = change;
  if (before.status !== "active") return;
  const kept = after.status === "active" ? uniqueValues(after.customer).map((value) => value.stream) : [];
  for (const value of uniqueValues(before.customer)) {
    if (!kept.includes(value.stream)) await releaseUnique(deps, value, metadata);
  }
}
