import type { BusLogger } from "../log.ts";
import type { KvEntry } from "../port.ts";
import { assertKvKey, subjectMatches } from "../subjects.ts";

export type WatchChange = KvEntry | { key: string; deleted: true };

interface Stored {
  value?: Uint8Array;
  revision: number;
  writtenAt: number;
  deleted: boolean;
}

/** One KV bucket: a revision counter shared by its keys, like the stream behind a NATS bucket. */
export class Bucket {
  private revision = 0;
  private readonly entries = new Map<string, Stored>();
  private readonly watchers = new Set<{ pattern: string; onChange: (change: WatchChange) => void }>();
  private lastSweep = Date.now();

  constructor(
    private readonly ttlMs: number | undefined,
    private readonly log: BusLogger,
  ) {}

  /** The latest write of `key` (a delete marker included) unless it has aged out. */
  current(key: string): Stored | undefined {
    assertKvKey(key);
    const stored = this.entries.get(key);
    if (stored && this.ttlMs && Date.now() - stored.writtenAt >= this.ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return stored;
  }

  get(key: string): KvEntry | undefined {
    const stored = this.current(key);
    if (!stored?.value) return undefined;
    return { key, value: stored.value.slice(), revision: stored.revision };
  }

  /** Keys holding a value now (not deleted, not aged out). */
  liveKeys(): string[] {
    return [...this.entries.keys()].filter((key) => this.current(key)?.deleted === false);
  }

  /** Writes a value, or a delete marker when `value` is undefined; returns the new revision. */
  write(key: string, value: Uint8Array | undefined): number {
    assertKvKey(key);
    this.sweep();
    const stored: Stored = {
      value: value?.slice(),
      revision: ++this.revision,
      writtenAt: Date.now(),
      deleted: value === undefined,
    };
    this.entries.set(key, stored);
    for (const watcher of this.watchers) {
      if (!subjectMatches(watcher.pattern, key)) continue;
      const change: WatchChange = value
        ? { key, value: value.slice(), revision: stored.revision }
        : { key, deleted: true };
      queueMicrotask(() => {
        try {
          watcher.onChange(change);
        } catch (err) {
          this.log.error({ err, key }, "kv watch handler failed");
        }
      });
    }
    return stored.revision;
  }

  watch(pattern: string, onChange: (change: WatchChange) => void): () => Promise<void> {
    const watcher = { pattern, onChange };
    this.watchers.add(watcher);
    return async () => {
      this.watchers.delete(watcher);
    };
  }

  /** Drops aged-out entries now and then, so keys nobody reads again do not pile up. */
  private sweep(): void {
    if (!this.ttlMs || Date.now() - this.lastSweep < Math.min(this.ttlMs, 60_000)) return;
    this.lastSweep = Date.now();
    for (const key of [...this.entries.keys()]) this.current(key);
  }
}
