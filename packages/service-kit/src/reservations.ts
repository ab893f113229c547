import type { EventMetadata, EventStore, RecordedEvent } from "@cheese/event-store";
import { type Clock, isoNow } from "./clock.ts";
import { type Decider, type DomainEvent, handleCommand } from "./decider.ts";
import { conflict, isRefusal } from "./errors.ts";

/**
 * Unique values (a cheese name within its category, a username, an email), enforced on the
 * write side: one stream per normalised value, `Reserved` by one holder (an id) at a time,
 * appended with an expected revision, so of racing reservations exactly one wins.
 *
 * A holder reserves the value before it writes it, and releases it when it stops having it (a
 * rename, a deletion, a registration that failed half-way). Should a release be lost (a crash),
 * the rules, the same for every service:
 *  - staleness: a reservation is stale when, one minute after it was made, its holder does not
 *    have the value (it was never written, was renamed or deleted);
 *  - takeover: the next holder asking for a stale value takes it over (`Reserved` with
 *    `replacing`, expected revision: of two askers one wins); a fresh or live one is 409.
 */

export const RESERVATION_STALE_AFTER_MS = 60_000;

export type ReservationEvent =
  | DomainEvent<"Reserved", { holder: number; at?: string; replacing?: number }>
  | DomainEvent<"Released", { holder: number }>;

export type ReservationCommand =
  | { type: "Reserve"; holder: number; at: string; replacing?: number }
  | { type: "Release"; holder: number };

export interface ReservationState {
  holder: number | undefined;
  /** When the holder reserved it (absent in reservations recorded before this was kept). */
  reservedAt?: string | undefined;
}

/**
 * Events recorded before this mechanism was shared: the catalogue's `NameReserved` /
 * `NameReleased` (`cheeseId`) and the customer service's `Reserved` / `Released` (`customerId`).
 */
function upcast(event: { type: string; data: unknown }): ReservationEvent {
  const data = event.data as Record<string, unknown>;
  const holder = (data.holder ?? data.cheeseId ?? data.customerId) as number;
  if (event.type === "Released" || event.type === "NameReleased")
    return { type: "Released", data: { holder } };
  return { type: "Reserved", data: { holder, ...(typeof data.at === "string" ? { at: data.at } : {}) } };
}

type ReservationDecider = Decider<ReservationState, ReservationCommand, ReservationEvent>;

/** One decider per message, so that `handleCommand` remembers the reservations' states. */
const deciders = new Map<string, ReservationDecider>();

/** `whenTaken`: the 409 message, e.g. "username already exists". */
export function reservationDecider(whenTaken: string): ReservationDecider {
  let decider = deciders.get(whenTaken);
  if (!decider) {
    decider = decideReservations(whenTaken);
    deciders.set(whenTaken, decider);
  }
  return decider;
}

function decideReservations(whenTaken: string): ReservationDecider {
  return {
    initialState: () => ({ holder: undefined }),
    evolve(state, recorded) {
      const event = upcast(recorded);
      switch (event.type) {
        case "Reserved":
          return { holder: event.data.holder, reservedAt: event.data.at };
        case "Released":
          return state.holder === event.data.holder ? { holder: undefined } : state;
      }
    },
    decide(command, state) {
      switch (command.type) {
        case "Reserve": {
          if (state.holder === command.holder) return [];
          if (state.holder !== undefined && state.holder !== command.replacing) throw conflict(whenTaken);
          const { holder, at, replacing } = command;
          const replaced = state.holder !== undefined && replacing !== undefined ? { replacing } : {};
          return [{ type: "Reserved", data: { holder, at, ...replaced } }];
        }
        case "Release":
          return state.holder === command.holder
            ? [{ type: "Released", data: { holder: command.holder } }]
            : [];
      }
    },
  };
}

/**
 * The aggregate that holds unique values (a cheese, a customer): its stream, its decider, and
 * the value streams a state of it has. A stale reservation's holder is folded with it to see
 * whether it still has the value.
 */
export interface Holders<S, E extends DomainEvent = DomainEvent> {
  stream: (holder: number) => string;
  decider: Pick<Decider<S, unknown, E>, "initialState" | "evolve">;
  values: (state: S) => readonly string[];
}

export interface UniqueValue<S = unknown, E extends DomainEvent = DomainEvent> {
  /** The value's stream, `<category>-<normalised value>`. */
  stream: string;
  holder: number;
  /** The 409 message when another holder has it. */
  whenTaken: string;
  heldBy: Holders<S, E>;
}

/**
 * Reserves the value for its holder: 409 when another holder has it, takeover when stale. A
 * value is seldom held already, so its stream is not read first: the append's expected revision
 * (`no_stream`) finds out when it is (see `newStream` in decider.ts).
 */
export async function reserveUnique<S, E extends DomainEvent>(
  deps: { store: EventStore; clock: Clock },
  value: UniqueValue<S, E>,
  metadata: EventMetadata = {},
): Promise<void> {
  const decider = reservationDecider(value.whenTaken);
  const reserve = (replacing?: number) =>
    handleCommand(
      deps.store,
      value.stream,
      decider,
      { type: "Reserve", holder: value.holder, at: isoNow(deps.clock), ...(replacing ? { replacing } : {}) },
      { metadata, newStream: true },
    );
  try {
    await reserve();
  } catch (error) {
    if (!isRefusal(error, 409)) throw error;
    // Taken: taken over only when stale, older than a minute and not had by its holder.
    const current = (await deps.store.readStream(value.stream)).reduce(
      datedEvolve(decider),
      decider.initialState(),
    );
    if (current.holder === undefined) throw error;
    const reservedAt = current.reservedAt ? Date.parse(current.reservedAt) : 0;
    if (deps.clock.now().getTime() - reservedAt < RESERVATION_STALE_AFTER_MS) throw error;
    const { heldBy } = value;
    const holder = (await deps.store.readStream(heldBy.stream(current.holder))).reduce(
      (state, event) => heldBy.decider.evolve(state, { type: event.type, data: event.data } as E),
      heldBy.decider.initialState(),
    );
    if (heldBy.values(holder).includes(value.stream)) throw error;
    await reserve(current.holder);
  }
}

/** Gives the value back; nothing happens unless `holder` has it. */
export async function releaseUnique(
  deps: { store: EventStore },
  value: Pick<UniqueValue, "stream" | "holder" | "whenTaken">,
  metadata: EventMetadata = {},
): Promise<void> {
  await handleCommand(
    deps.store,
    value.stream,
    reservationDecider(value.whenTaken),
    { type: "Release", holder: value.holder },
    { metadata },
  );
}

/** Folds a reservation, with the recorded time standing in for reservations that kept none. */
function datedEvolve(decider: ReservationDecider) {
  return (state: ReservationState, event: RecordedEvent): ReservationState => {
    const next = decider.evolve(state, event as unknown as ReservationEvent);
    return next.holder !== undefined && next.reservedAt === undefined && next !== state
      ? { ...next, reservedAt: event.createdAt }
      : next;
  };
}
