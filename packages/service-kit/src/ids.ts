import { type EventStore, WrongExpectedRevisionError } from "@cheese/event-store";

interface IdBlockReserved {
  first: number;
  last: number;
}

/**
 * Hands out positive integer ids that are never reused, without a global lock per request:
 * each replica reserves a block by appending `IdBlockReserved` to `idblock-<kind>` with the
 * expected revision (a racing replica retries with the next block), then serves ids from memory.
 *
 * Ids also increase across replicas for any caller whose requests follow one another: before
 * handing out an id, a replica checks (one read of the stream's tail) whether another replica
 * has reserved a later block since; if so it abandons the rest of its block and reserves after
 * that one. The ids asked for while no check has started yet share the next one (it starts in
 * the next turn of the event loop, after every one of them was asked for, so it sees every block
 * reserved before): one read for the requests of a turn, not one per id. Ids left in an
 * abandoned block, or in a block when a process stops, are skipped, never reused.
 */
export class IdAllocator {
  private next = 0;
  private last = -1;
  private pending: Promise<void> | undefined;
  /** The next check for a later block, not started yet: the ids asked for meanwhile share it. */
  private check: Promise<boolean> | undefined;
  /** Revision of our current block's event in the stream (-1: none yet). */
  private ownRevision = -1;
  /** Revision of the newest block this replica has seen; reading starts there, not at 0. */
  private seenRevision = 0;

  constructor(
    private readonly store: EventStore,
    private readonly kind: string,
    private readonly blockSize = 50,
  ) {}

  private get stream(): string {
    return `idblock-${this.kind}`;
  }

  async nextId(): Promise<number> {
    for (;;) {
      if (this.next <= this.last && !(await this.laterBlockExists())) {
        if (this.next <= this.last) return this.next++;
      }
      this.pending ??= this.reserveBlock().finally(() => {
        this.pending = undefined;
      });
      await this.pending;
      if (this.next <= this.last) return this.next++;
    }
  }

  private laterBlockExists(): Promise<boolean> {
    this.check ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.check = undefined; // asked for from now on: the next check
      return this.readLaterBlock();
    });
    return this.check;
  }

  private async readLaterBlock(): Promise<boolean> {
    const later = await this.store.readStream(this.stream, {
      fromRevision: this.ownRevision + 1,
      maxCount: 1,
    });
    return later.length > 0;
  }

  private async reserveBlock(): Promise<void> {
    for (;;) {
      const events = await this.store.readStream(this.stream, { fromRevision: this.seenRevision });
      const lastEvent = events[events.length - 1];
      if (lastEvent) this.seenRevision = lastEvent.revision;
      const previous = lastEvent ? (lastEvent.data as IdBlockReserved).last : 0;
      const block: IdBlockReserved = { first: previous + 1, last: previous + this.blockSize };
      try {
        const { nextRevision } = await this.store.append(
          this.stream,
          [{ type: "IdBlockReserved", data: block }],
          {
            expectedRevision: lastEvent ? lastEvent.revision : "no_stream",
          },
        );
        this.next = block.first;
        this.last = block.last;
        this.ownRevision = nextRevision;
        this.seenRevision = nextRevision;
        return;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
      }
    }
  }
}
