import type { EventMetadata, EventStore } from "@cheese/event-store";
import { DomainError, foldEvents, handleCommand } from "@cheese/service-kit";
import { cheeseDecider, cheeseStream } from "../domain/cheese.ts";
import { nameReservationDecider } from "../domain/name-reservation.ts";

/**
 * Takes the name (409 when another cheese holds it). A holder that has since been deleted no
 * longer counts: if its release was lost, say to a crash, the name is taken over from it.
 */
export async function reserveName(
  store: EventStore,
  stream: string,
  cheeseId: number,
  metadata: EventMetadata,
): Promise<void> {
  try {
    await handleCommand(
      store,
      stream,
      nameReservationDecider,
      { type: "Reserve", cheeseId },
      { metadata: metadata },
    );
  } catch (error) {
    if (!(error instanceof DomainError) || error.body.status !== 409) throw error;
    const { holder } = foldEvents(nameReservationDecider, await store.readStream(stream));
    if (holder === undefined || !(await isDeleted(store, holder))) throw error;
    await handleCommand(
      store,
      stream,
      nameReservationDecider,
      { type: "Reserve", cheeseId, replacing: holder },
      { metadata: metadata },
    );
  }
}

export async function releaseName(
  store: EventStore,
  stream: string,
  cheeseId: number,
  metadata: EventMetadata,
): Promise<void> {
  await handleCommand(
    store,
    stream,
    nameReservationDecider,
    { type: "Release", cheeseId },
    { metadata: metadata },
  );
}

async function isDeleted(store: EventStore, cheeseId: number): Promise<boolean> {
  const state = foldEvents(cheeseDecider, await store.readStream(cheeseStream(cheeseId)));
  return state.phase === "deleted";
}
