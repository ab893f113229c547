import { type EventStore, WrongExpectedRevisionError } from "@cheese/event-store";
import type { IdAllocator } from "@cheese/service-kit";

/**
 * One id per distinct category or tag name (case-insensitive): the first writer of
 * `<kind>name-<lower name>` fixes the id; a racing writer reads the winner's id.
 */
export async function idForName(
  store: EventStore,
  ids: IdAllocator,
  kind: "category" | "tag",
  name: string,
): Promise<number> {
  const stream = `${kind}name-${name.trim().toLowerCase()}`;
  for (;;) {
    const [named] = await store.readStream(stream, { maxCount: 1 });
    if (named) return (named.data as { id: number }).id;
    const id = await ids.nextId();
    try {
      await store.append(stream, [{ type: "NameIdAssigned", data: { id, name } }], {
        expectedRevision: "no_stream",
      });
      return id;
    } catch (error) {
      if (!(error instanceof WrongExpectedRevisionError)) throw error;
    }
  }
}
