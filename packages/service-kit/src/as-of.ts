import type { EventStore, RecordedEvent } from "@cheese/event-store";
import { type DomainEvent, foldEvents } from "./decider.ts";

/** A stream folded up to a moment: the state then, and the last event folded (none: nothing yet). */
export interface StateAsOf<State> {
  state: State;
  last: RecordedEvent | undefined;
}

/**
 * The aggregate as it was at `asOf` (an instant, ms since the epoch): its stream read in revision
 * order and folded with the decider's own `evolve`, from the first event up to the last one
 * recorded at or before `asOf` (`createdAt`, the store's time). The fold stops at the first event
 * recorded later, so a clock that stepped back cannot mix a later event into an earlier state.
 * Pure reading: no cache, no read model, nothing remembered.
 */
export async function foldStreamAsOf<State, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: { initialState: () => State; evolve: (state: State, event: Event) => State },
  asOf: number,
): Promise<StateAsOf<State>> {
  const events = await store.readStream(streamName);
  const cut = events.findIndex((event) => Date.parse(event.createdAt) > asOf);
  const folded = cut === -1 ? events : events.slice(0, cut);
  return { state: foldEvents(decider, folded), last: folded.at(-1) };
}
