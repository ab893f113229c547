import { type EventStore, WrongExpectedRevisionError } from "@cheese/event-store";

interface IdBlockReserved {
  first: number;
  last: number;
}

/**
 * Hands out positive integer ids that are never reused, without a global lock per request:
 * each replica reserves a block by appending `IdBlockReserved` to `idblock-<kind>` with the
 * expected revision (a racing replica retries with the next block), then serves ids from memory.
 * Ids left in a block when a process stops are skipped, never reused.
 */
export class IdAllocator {
  private next = 0;
  private last = -1;
  private pending: Promise<void> | undefined;
  /** Revision of the newest block this replica has seen; reading starts there, not at 0. */
  private seenRevision = 0;

  constructor(
    private readonly store: EventStore,
    private readonly kind: string,
    private readonly blockSize = 50,
  ) {}

  async nextId(): Promise<number> {
    while (this.next > this.last) {
      this.pending ??= this.reserveBlock().finally(() => {
        this.pending = undefined;
      });
      await this.pending;
    }
    return this.next++;
  }

  private async reserveBlock(): Promise<void> {
    const stream = `idblock-${this.kind}`;
    for (;;) {
      const events = await this.store.readStream(stream, { fromRevision: this.seenRevision });
      const lastEvent = events[events.length - 1];
      if (lastEvent) this.seenRevision = lastEvent.revision;
      const previous = lastEvent ? (lastEvent.data as IdBlockReserved).last : 0;
      const block: IdBlockReserved = { first: previous + 1, last: previous + this.blockSize };
      try {
        await this.store.append(stream, [{ type: "IdBlockReserved", data: block }], {
          expectedRevision: lastEvent ? lastEvent.revision : "no_stream",
        });
        this.next = block.first;
        this.last = block.last;
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
      }
    }
  }
}
