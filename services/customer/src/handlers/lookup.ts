import type { EventMetadata, EventStore } from "@cheese/event-store";
import { DomainError, foldEvents, handleCommand } from "@cheese/service-kit";
import { type CustomerData, customerDecider, customerStream } from "../domain/customer.ts";
import { type ReservedValue, reservationDecider, usernameStream } from "../domain/reservation.ts";

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
    reservationDecider("username"),
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
    throw new DomainError(403, "forbidden", "a customer may only access its own account");
  }
  if (!found) throw new DomainError(404, "not_found", `customer ${username} not found`);
  return found;
}

/** A reservation older than this whose customer never appeared is left over from a crash. */
const ABANDONED_AFTER_MS = 60_000;

/**
 * Reserves a username or email for a customer (409 when someone else holds it). A reservation
 * left by a registration that crashed before its customer existed is taken over after a minute.
 */
export async function reserve(
  store: EventStore,
  what: ReservedValue,
  stream: string,
  customerId: number,
  metadata: EventMetadata,
): Promise<void> {
  const decider = reservationDecider(what);
  try {
    await handleCommand(store, stream, decider, { type: "Reserve", customerId }, { metadata: metadata });
  } catch (error) {
    if (!(error instanceof DomainError) || error.body.status !== 409) throw error;
    const events = await store.readStream(stream);
    const holder = foldEvents(decider, events).holder;
    const last = events[events.length - 1];
    const abandoned =
      holder !== undefined &&
      last !== undefined &&
      Date.now() - Date.parse(last.createdAt) > ABANDONED_AFTER_MS &&
      (await store.readStream(customerStream(holder), { maxCount: 1 })).length === 0;
    if (!abandoned) throw error;
    await handleCommand(
      store,
      stream,
      decider,
      { type: "Release", customerId: holder },
      { metadata: metadata },
    );
    await handleCommand(store, stream, decider, { type: "Reserve", customerId }, { metadata: metadata });
  }
}

export async function release(
  store: EventStore,
  what: ReservedValue,
  stream: string,
  customerId: number,
  metadata: EventMetadata,
): Promise<void> {
  await handleCommand(
    store,
    stream,
    reservationDecider(what),
    { type: "Release", customerId },
    { metadata: metadata },
  );
}
