import {
  type EventMetadata,
  type EventStore,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from "@cheese/event-store";
import { conflict } from "./errors.ts";

/** A domain event as deciders see it: a type tag and a JSON payload. */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/**
 * An aggregate as a decider (Emmett style): pure functions, no I/O, no clock, no randomness
 * (a time or an id a command needs is in the command). `decide` refuses a command by throwing a
 * `DomainError` (`notFound(...)`, `conflict(...)`, ... from errors.ts).
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Event[];
}

export function foldEvents<State, Event extends DomainEvent>(
  decider: Pick<Decider<State, unknown, Event>, "initialState" | "evolve">,
  events: readonly RecordedEvent[],
): State {
  return events.reduce(
    (state, event) => decider.evolve(state, { type: event.type, data: event.data } as Event),
    decider.initialState(),
  );
}

export interface CommandResult<State, Event> {
  /** State the command was decided on. */
  before: State;
  /** State after the new events. */
  state: State;
  newEvents: Event[];
  /** Stream revision after the append (or the current one when nothing was appended). */
  revision: number;
  /** Global position of the last appended event, or undefined when nothing was appended. */
  position: number | undefined;
}

export interface CommandOptions<State, Event> {
  metadata?: EventMetadata;
  /** Tries in all before a lost append race is given up (default {@link COMMAND_ATTEMPTS}). */
  attempts?: number;
  /**
   * Runs after `decide`, before the append, with the state before and after the new events:
   * the place for a step that must hold before the events are written (the catalogue reserves a
   * cheese's new name here). It runs again on every retry; throwing refuses the command.
   */
  beforeAppend?: (change: { before: State; after: State; newEvents: Event[] }) => Promise<void>;
}

/** How many times a command is tried when concurrent writers keep winning the append. */
export const COMMAND_ATTEMPTS = 5;

/** What the caller hears when concurrent writers won every attempt: 409, never a 500. */
export const CONCURRENT_CHANGE = "the resource is being changed by concurrent requests; try again";

/**
 * Read stream, fold, decide, append with the read revision as the expected revision. A
 * concurrent writer makes the append fail; the whole cycle is then retried on fresh state, up to
 * {@link COMMAND_ATTEMPTS} times in all (unless `attempts` says otherwise). Should concurrent
 * writers win every attempt, the command is refused with 409 `conflict` (nothing was written),
 * never an internal error. The one command handler of every service.
 */
export async function handleCommand<State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  options: CommandOptions<State, Event> = {},
): Promise<CommandResult<State, Event>> {
  const metadata = options.metadata ?? {};
  for (let attempt = 1; ; attempt++) {
    const recorded = await store.readStream(streamName);
    const state = foldEvents(decider, recorded);
    const revision = recorded.length === 0 ? -1 : recorded[recorded.length - 1]!.revision;
    const newEvents = decider.decide(command, state);
    if (newEvents.length === 0) return { before: state, state, newEvents, revision, position: undefined };
    const next = newEvents.reduce(decider.evolve, state);
    await options.beforeAppend?.({ before: state, after: next, newEvents });
    try {
      const result = await store.append(
        streamName,
        newEvents.map((event) => ({ type: event.type, data: event.data, metadata })),
        { expectedRevision: revision === -1 ? "no_stream" : revision },
      );
      return {
        before: state,
        state: next,
        newEvents,
        revision: result.nextRevision,
        position: result.position,
      };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
      if (attempt >= (options.attempts ?? COMMAND_ATTEMPTS)) throw conflict(CONCURRENT_CHANGE);
    }
  }
}
