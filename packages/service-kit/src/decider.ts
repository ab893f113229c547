import {
  type EventMetadata,
  type EventStore,
  type RecordedEvent,
  WrongExpectedRevisionError,
} from "@cheese/event-store";
import { RemoteError } from "@cheese/messaging";

/** A domain event as deciders see it: a type tag and a JSON payload. */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/**
 * An aggregate as a decider (Emmett style): pure functions, no I/O.
 * `decide` refuses a command by throwing a {@link DomainError}.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  initialState: () => State;
  evolve: (state: State, event: Event) => State;
  decide: (command: Command, state: State) => Event[];
}

/** A refusal with the HTTP status and error type the caller will see. */
export class DomainError extends RemoteError {
  constructor(status: number, type: string, message: string, errors?: { field: string; message: string }[]) {
    super(errors ? { status, type, message, errors } : { status, type, message });
  }
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
  /** State after the new events. */
  state: State;
  newEvents: Event[];
  /** Stream revision after the append (or the current one when nothing was appended). */
  revision: number;
  /** Global position of the last appended event, or undefined when nothing was appended. */
  position: number | undefined;
}

/**
 * Read stream, fold, decide, append with the read revision as the expected revision. A
 * concurrent writer makes the append fail; the whole cycle is then retried on fresh state.
 */
export async function handleCommand<State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  metadata: EventMetadata = {},
  attempts = 5,
): Promise<CommandResult<State, Event>> {
  for (let attempt = 1; ; attempt++) {
    const recorded = await store.readStream(streamName);
    const state = foldEvents(decider, recorded);
    const revision = recorded.length === 0 ? -1 : recorded[recorded.length - 1]!.revision;
    const newEvents = decider.decide(command, state);
    if (newEvents.length === 0) return { state, newEvents, revision, position: undefined };
    try {
      const result = await store.append(
        streamName,
        newEvents.map((event) => ({ type: event.type, data: event.data, metadata })),
        { expectedRevision: revision === -1 ? "no_stream" : revision },
      );
      const next = newEvents.reduce(decider.evolve, state);
      return { state: next, newEvents, revision: result.nextRevision, position: result.position };
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError) || attempt >= attempts) throw error;
    }
  }
}
