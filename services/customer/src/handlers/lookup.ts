import type { EventStore } from "@cheese/event-store";
import { foldEvents, forbidden, notFound, reservationDecider } from "@cheese/service-kit";
import {
  type CustomerData,
  customerDecider,
  customerStream,
  IDENTITY_TAKEN,
  usernameStream,
} from "../domain/customer.ts";

export interface LoadedCustomer {
  customer: CustomerData;
  /** Stream revision read, for an append that must not overwrite a concurrent change. */
  revision: number;
}

/** The customer's current state straight from its stream, or undefined if absent or deleted. */
export async function loadCustomer(
  store: EventStore,
  customerId: number,
): Promise<LoadedCustomer | undefined> {
  const events = await store.readStream(customerStream(customerId));
  const state = foldEvents(customerDecider, events);
  if (state.status !== "active") return undefined;
  return { customer: state.customer, revision: events[events.length - 1]!.revision };
}

/**
 * Username → customer through the username's reservation stream: consistent with the write side,
 * so a customer can log in the moment registration answers, on any replica.
 */
export async function findByUsername(
  store: EventStore,
  username: string,
): Promise<LoadedCustomer | undefined> {
  // Nobody can hold a name outside the username rules; such names never reach a stream name.
  if (!/^[A-Za-z0-9._-]{3,32}$/.test(username)) return undefined;
  const holder = foldEvents(
    reservationDecider(IDENTITY_TAKEN),
    await store.readStream(usernameStream(username)),
  ).holder;
  if (holder === undefined) return undefined;
  const loaded = await loadCustomer(store, holder);
  if (loaded?.customer.username.toLowerCase() !== username.toLowerCase()) return undefined;
  return loaded;
}

/**
 * The account a request may touch: a customer only itself (403 for any other name, existing or
 * not, so nobody learns which usernames exist); an operator (`asCustomer` null) anyone.
 */
export async function ownedCustomer(
  store: EventStore,
  username: string,
  asCustomer: number | null,
): Promise<LoadedCustomer> {
  const found = await findByUsername(store, username);
  if (asCustomer !== null && found?.customer.customerId !== asCustomer) {
    throw forbidden("a customer may only access its own account");
  }
  if (!found) throw notFound(`customer ${username} not found`);
  return found;
}
