import { randomUUID } from "node:crypto";
import {
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type RecordedEvent,
  type StreamAppend,
  WrongExpectedRevisionError,
} from "@cheese/event-store";
import { conflict, DomainError } from "./errors.ts";

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
  from: State = decider.initialState(),
): State {
  return events.reduce(
    (state, event) => decider.evolve(state, { type: event.type, data: event.data } as Event),
    from,
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

/**
 * A write to another stream that goes into the same append as a command's events
 * (`handleCommand`'s `alongside`): both written, or neither (`EventStore.appendStreams`). A
 * unique value's reservation is one (`reserveUnique`).
 */
export interface AlongsideWrite {
  /** The stream it writes. */
  readonly stream: string;
  /**
   * Its events and the expectation they are appended with: at first as guessed, without
   * reading; once an append was refused on this stream (`refused`), on the stream as it is now.
   * Undefined: nothing to write. Throwing (a `DomainError`) refuses the command.
   */
  decide(refused: boolean): Promise<Omit<StreamAppend, "streamName"> | undefined>;
  /**
   * Written after the command's own events rather than before. The order only shows where the
   * streams are written one after the other (the EventStoreDB adapter): the one first is the one
   * a crash between them leaves alone, so it goes first whose lone presence can be repaired (a
   * reservation without its holder goes stale; a recorded plan without its deliveries is
   * completed when its event is handled again).
   */
  readonly after?: boolean;
  /** Told what the append wrote to its stream (the result of its part). */
  appended?(result: AppendResult): void;
}

/**
 * A command on another stream, written alongside (see {@link AlongsideWrite}), such as a webhook
 * delivery created in the same append as the plan it belongs to. Its stream most likely does not
 * exist (a fresh id): decided at first on the initial state with `no_stream`, unread; once
 * refused, on the stream as it is. Its state after the append is remembered as
 * {@link handleCommand} remembers it, so the next command on it need not read it.
 */
export function commandAlongside<State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  options: {
    metadata?: EventMetadata;
    after?: boolean;
    /** Told the stream's state and revision once the append wrote its events. */
    appended?: (written: { state: State; revision: number }) => void;
  } = {},
): AlongsideWrite {
  const folded = foldedStreams<State>(store, decider);
  let decided: { state: State; eventId: string } | undefined;
  return {
    stream: streamName,
    ...(options.after ? { after: true } : {}),
    async decide(refused) {
      const current = refused
        ? await currentState(store, streamName, decider, folded)
        : { state: decider.initialState(), revision: -1 };
      const newEvents = decider.decide(command, current.state);
      decided = undefined;
      if (newEvents.length === 0) return undefined;
      const events = toNewEvents(newEvents, options.metadata);
      decided = { state: newEvents.reduce(decider.evolve, current.state), eventId: events.at(-1)!.id };
      return { events, expectedRevision: current.revision === -1 ? "no_stream" : current.revision };
    },
    appended(result) {
      if (!decided) return;
      remember(folded, streamName, { ...decided, revision: result.nextRevision });
      options.appended?.({ state: decided.state, revision: result.nextRevision });
    },
  };
}

/**
 * A decision's events as appended, their ids given here, so that the state after the append is
 * remembered with its last event's id.
 */
function toNewEvents(newEvents: readonly DomainEvent[], metadata: EventMetadata = {}) {
  return newEvents.map((event) => ({ id: randomUUID(), type: event.type, data: event.data, metadata }));
}

export interface CommandOptions<State, Event> {
  metadata?: EventMetadata;
  /** Tries in all before a lost append race is given up (default {@link COMMAND_ATTEMPTS}). */
  attempts?: number;
  /**
   * Writes to other streams that go into the command's append, decided before its own stream:
   * all are written or none. Given as a function, they depend on the change (the state before
   * and after the new events; a cheese's new name is reserved with the change that gives it);
   * nothing is written when the command decides no events. On a refusal every write is decided
   * again, the refused stream's on what it holds now.
   */
  alongside?:
    | readonly AlongsideWrite[]
    | ((change: { before: State; after: State; newEvents: Event[] }) => readonly AlongsideWrite[]);
  /**
   * The stream most likely does not exist yet (a freshly allocated id, a value seldom held
   * before): unless its state is remembered, the first try decides on the initial state without
   * reading the stream and appends with `no_stream`. Should the stream exist after all, that
   * append is refused and the command is handled as without the hint (read, decide, append); so
   * is a command that, on the initial state, is refused or decides nothing. A hint, never a
   * check: the result is the same either way.
   */
  newStream?: boolean;
  /**
   * The state remembered for the stream is most likely its current one (this process wrote it
   * last, as the webhook scheduler claiming an attempt of a delivery it created): the first try
   * decides on it without reading the stream and appends with its revision. Should the stream
   * have moved since, the store refuses that append and the command is handled as without the
   * hint; so is a command refused, or deciding nothing, on the remembered state. Only for streams
   * that are never deleted (one deleted and written again up to the same revision would pass the
   * revision check). A hint, never a check: the result is the same either way.
   */
  rememberedIsCurrent?: boolean;
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
 *
 * The state a stream folds to is remembered (per store and decider, the last
 * {@link FOLDED_STREAMS} streams handled), so the next command on it reads only the events
 * after it: a cheese updated a thousand times is not read a thousand events long each time.
 * A stream the caller expects to be new (`newStream`) is not read at all unless the guess fails.
 * Writes to other streams that must stand or fall with the command's events (`alongside`: a
 * unique value's reservation) go into the same append, one write for all.
 */
export async function handleCommand<State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  options: CommandOptions<State, Event> = {},
): Promise<CommandResult<State, Event>> {
  const folded = foldedStreams<State>(store, decider);
  const remembered = folded.get(streamName);
  // The guess: decided on the initial state (newStream) or the remembered one, unread. Only an
  // append it made counts; the store's expected revision refuses it when the stream is not
  // (or no longer) what was guessed.
  let current: { state: State; revision: number } | undefined =
    options.newStream && !remembered
      ? { state: decider.initialState(), revision: -1 }
      : options.rememberedIsCurrent
        ? remembered
        : undefined;
  let guessing = current !== undefined;
  /** Streams written alongside whose expectation refused an append: decided again on what they hold. */
  const refused = new Set<string>();
  let refusals = 0;
  const attempts = (options.attempts ?? COMMAND_ATTEMPTS) + (guessing ? 1 : 0);
  for (;;) {
    try {
      current ??= await currentState(store, streamName, decider, folded);
      const result = await decideAndAppend(
        store,
        streamName,
        decider,
        command,
        options,
        folded,
        current,
        refused,
      );
      if (!guessing || result.newEvents.length > 0) return result;
      // Nothing decided on the guessed state: decided again on the stream as it is.
    } catch (error) {
      const lost = error instanceof WrongExpectedRevisionError;
      // Refused by its own decider on the guessed state (later ones come from alongside).
      const refusedOnGuess = guessing && refused.size === 0 && error instanceof DomainError;
      if (!lost && !refusedOnGuess) throw error;
      if (lost && ++refusals >= attempts) throw conflict(CONCURRENT_CHANGE);
      if (lost && error.streamName !== streamName) {
        refused.add(error.streamName);
        continue; // the own stream as it was: its expectation is checked with the next append
      }
    }
    guessing = false;
    current = undefined;
  }
}

/**
 * The state a stream folds to now, read as {@link handleCommand} reads it, from the same memory:
 * from a state remembered for it (by a command or an earlier read), only the events from that
 * one on (the one to show the stream was not deleted and written again since). Every call is
 * answered by a read of the store that starts after it, so it sees every event recorded before
 * it (a pause recorded before an attempt), without reading and folding the whole stream each
 * time. The calls for one stream asked while no read of it has started yet share the next one
 * (it starts in the next turn of the event loop, after every one of them: the webhook
 * scheduler's attempts started or claimed together read their registration once, not once
 * each). The state is shared: read it only.
 */
export function readState<State, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Pick<Decider<State, unknown, Event>, "initialState" | "evolve">,
): Promise<State> {
  const waiting = waitingReads<State>(store, decider);
  let read = waiting.get(streamName);
  if (!read) {
    read = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => {
        waiting.delete(streamName); // asked for from now on: the next read
        return currentState(store, streamName, decider, foldedStreams<State>(store, decider));
      })
      .then(({ state }) => state);
    waiting.set(streamName, read);
  }
  return read;
}

/** Something kept per store, decider and stream name. */
type PerStream<V> = WeakMap<EventStore, WeakMap<object, Map<string, V>>>;

/** The map of one store and decider in `kept`, made on first use. */
function streamsOf<V>(kept: PerStream<V>, store: EventStore, decider: object): Map<string, V> {
  const byDecider = kept.get(store) ?? new WeakMap<object, Map<string, V>>();
  kept.set(store, byDecider);
  const streams = byDecider.get(decider) ?? new Map<string, V>();
  byDecider.set(decider, streams);
  return streams;
}

/** The reads of {@link readState} not started yet, per store, decider and stream. */
const waitingByStore: PerStream<Promise<unknown>> = new WeakMap();

function waitingReads<State>(store: EventStore, decider: object): Map<string, Promise<State>> {
  return streamsOf(waitingByStore, store, decider) as Map<string, Promise<State>>;
}

/** One try: decide on `current`, append with its revision as the expected revision, remember. */
async function decideAndAppend<State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  options: CommandOptions<State, Event>,
  folded: Map<string, Folded<State>>,
  { state, revision }: { state: State; revision: number },
  refused: ReadonlySet<string>,
): Promise<CommandResult<State, Event>> {
  const newEvents = decider.decide(command, state);
  if (newEvents.length === 0) return { before: state, state, newEvents, revision, position: undefined };
  const next = newEvents.reduce(decider.evolve, state);
  const { alongside = [] } = options;
  const others: { write: AlongsideWrite; append: StreamAppend }[] = [];
  for (const write of typeof alongside === "function"
    ? alongside({ before: state, after: next, newEvents })
    : alongside) {
    const decided = await write.decide(refused.has(write.stream));
    if (decided) others.push({ write, append: { streamName: write.stream, ...decided } });
  }
  const toAppend = toNewEvents(newEvents, options.metadata);
  const expectedRevision = revision === -1 ? "no_stream" : revision;
  let result: AppendResult;
  if (others.length === 0) result = await store.append(streamName, toAppend, { expectedRevision });
  else {
    const first = others.filter(({ write }) => !write.after);
    const last = others.filter(({ write }) => write.after);
    const results = await store.appendStreams([
      ...first.map(({ append }) => append),
      { streamName, events: toAppend, expectedRevision },
      ...last.map(({ append }) => append),
    ]);
    result = results[first.length]!;
    [...first, ...last].forEach(({ write }, i) => {
      write.appended?.(results[i < first.length ? i : i + 1]!);
    });
  }
  remember(folded, streamName, { state: next, revision: result.nextRevision, eventId: toAppend.at(-1)!.id });
  return { before: state, state: next, newEvents, revision: result.nextRevision, position: result.position };
}

/** A stream's state as of one of its events (its revision and id). */
interface Folded<State> {
  state: State;
  revision: number;
  eventId: string;
}

/** Streams whose folded state is remembered, per store and decider. */
const FOLDED_STREAMS = 1_000;
const foldedByStore: PerStream<Folded<unknown>> = new WeakMap();

function foldedStreams<State>(store: EventStore, decider: object): Map<string, Folded<State>> {
  return streamsOf(foldedByStore, store, decider) as Map<string, Folded<State>>;
}

/** Keeps the newest state of a stream, the least recently used streams making room. */
function remember<State>(streams: Map<string, Folded<State>>, streamName: string, folded: Folded<State>) {
  const known = streams.get(streamName);
  if (known && known.revision > folded.revision) return;
  streams.delete(streamName);
  streams.set(streamName, folded);
  if (streams.size > FOLDED_STREAMS) streams.delete(streams.keys().next().value as string);
}

/**
 * The stream folded: from the remembered state, reading from its event on (that event, still
 * there with the same id, shows the stream was not deleted and written again since), or from
 * the start when nothing is remembered or the stream has changed under it.
 */
async function currentState<State, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Pick<Decider<State, unknown, Event>, "initialState" | "evolve">,
  streams: Map<string, Folded<State>>,
): Promise<{ state: State; revision: number }> {
  const known = streams.get(streamName);
  let base: { state: State; revision: number; eventId?: string } = {
    state: decider.initialState(),
    revision: -1,
  };
  let recorded: RecordedEvent[];
  if (known) {
    const tail = await store.readStream(streamName, { fromRevision: known.revision });
    // A split event's parts come together: the remembered one is the last of them.
    const at = tail.findIndex((event) => event.revision === known.revision);
    if (at !== -1 && tail[at]!.id === known.eventId) {
      base = known;
      recorded = tail.slice(at + 1);
    } else {
      streams.delete(streamName);
      recorded = await store.readStream(streamName);
    }
  } else recorded = await store.readStream(streamName);
  const last = recorded.at(-1);
  if (!last) {
    if (known && base === known) remember(streams, streamName, known); // recently used
    return base;
  }
  const state = foldEvents(decider, recorded, base.state);
  remember(streams, streamName, { state, revision: last.revision, eventId: last.id });
  return { state, revision: last.revision };
}
