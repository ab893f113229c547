import type { EventMetadata, EventStore, RecordedEvent } from "@cheese/event-store";
import { type Clock, isoNow } from "./clock.ts";
import { type AlongsideWrite, type Decider, type DomainEvent, handleCommand } from "./decider.ts";
import { conflict } from "./errors.ts";

/**
 * Unique values (a cheese name within its category, a username, an email), enforced on the
 * write side: one stream per normalised value, `Reserved` by one holder (an id) at a time,
 * appended with an expected revision, so of racing reservations exactly one wins.
 *
 * A holder reserves the value in the same append as the events that give it the value (the
 * reservation is a write alongside them, `reserveUnique`), and releases it when it stops having
 * it (a rename, a deletion). Should a release be lost (a crash), or the reservation stand without
 * the holder's events (an event store whose multi-stream append is not atomic), the rules, the
 * same for every service:
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
 * The value's reservation for its holder, written alongside the holder's own events (pass it in
 * `handleCommand`'s `alongside`): both are written, or neither. A value is seldom held already,
 * so its stream is not read first: `Reserved` goes with the `no_stream` expectation, and the
 * append's refusal finds out when it is held (see `newStream` in decider.ts). Then, on the
 * stream as it is: nothing to write when the holder has it already, 409 (`whenTaken`) when
 * another holder has it, a takeover (`Reserved` with `replacing`, expecting the revision read)
 * when that reservation is stale.
 */
export function reserveUnique<S, E extends DomainEvent>(
  deps: { store: EventStore; clock: Clock },
  value: UniqueValue<S, E>,
  metadata: EventMetadata = {},
): AlongsideWrite {
  const decider = reservationDecider(value.whenTaken);
  const reserve = (state: ReservationState, replacing?: number) =>
    decider
      .decide(
        {
          type: "Reserve",
          holder: value.holder,
          at: isoNow(deps.clock),
          ...(replacing === undefined ? {} : { replacing }),
        },
        state,
      )
      .map((event) => ({ ...event, metadata }));
  return {
    stream: value.stream,
    async decide(refused) {
      if (!refused) return { events: reserve(decider.initialState()), expectedRevision: "no_stream" };
      const recorded = await deps.store.readStream(value.stream);
      const current = recorded.reduce(datedEvolve(decider), decider.initialState());
      const stale =
        current.holder !== undefined &&
        current.holder !== value.holder &&
        (await isStale(deps, value, { holder: current.holder, reservedAt: current.reservedAt }));
      const events = reserve(current, stale ? current.holder : undefined);
      if (events.length === 0) return undefined;
      return { events, expectedRevision: recorded.at(-1)?.revision ?? "no_stream" };
    },
  };
}

/** Stale: older than a minute, and not had by its holder (never written, renamed or deleted). */
async function isStale<S, E extends DomainEvent>(
  deps: { store: EventStore; clock: Clock },
  value: UniqueValue<S, E>,
  reservation: { holder: number; reservedAt: string | undefined },
): Promise<boolean> {
  const reservedAt = reservation.reservedAt ? Date.parse(reservation.reservedAt) : 0;
  if (deps.clock.now().getTime() - reservedAt < RESERVATION_STALE_AFTER_MS) return false;
  const { heldBy } = value;
  const holder = (await deps.store.readStream(heldBy.stream(reservation.holder))).reduce(
    (state, event) => heldBy.decider.evolve(state, { type: event.type, data: event.data } as E),
    heldBy.decider.initialState(),
  );
  return !heldBy.values(holder).includes(value.stream);
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
