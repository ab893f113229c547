import { type Closable, type KeyValue, KvConflictError, type KvOptions, type MessageBus } from "./port.ts";

/** How a record's value is kept as bytes; `decode` answers undefined for bytes it cannot read. */
export interface Codec<T> {
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T | undefined;
}

/** JSON, with an optional check of what was parsed (undefined: unreadable). */
export function jsonCodec<T>(check: (parsed: unknown) => T | undefined = (parsed) => parsed as T): Codec<T> {
  return {
    encode: (value) => new TextEncoder().encode(JSON.stringify(value)),
    decode(bytes) {
      try {
        return check(JSON.parse(new TextDecoder().decode(bytes)));
      } catch {
        return undefined;
      }
    },
  };
}

/** A record as read: its value (undefined when unreadable) and the revision to compare-and-set on. */
export interface KvRecord<T> {
  key: string;
  value: T | undefined;
  revision: number;
}

/** What a record's change sees: the record, or undefined when there is none. */
export type Change<T> = (current: KvRecord<T> | undefined) => T | undefined;

/** How often {@link KvRecords.update} reads again after losing a compare-and-set, by default. */
const KV_UPDATE_ATTEMPTS = 25;

/**
 * Typed records in one key-value bucket: the one way every service uses the bus's key-value
 * store. The bucket is opened once, on first use (a failed open, NATS away, is tried again on
 * the next call instead of remembered); values go through a codec; `update` is the
 * compare-and-set loop (read, change, write at the revision read, read again when another writer
 * came in between), and `create` the create-if-absent.
 */
export class KvRecords<T> {
  private opening: Promise<KeyValue> | undefined;

  constructor(
    private readonly bus: Pick<MessageBus, "kv">,
    readonly bucket: string,
    private readonly codec: Codec<T>,
    private readonly options: KvOptions & { attempts?: number } = {},
  ) {}

  /** The bucket, opened once. */
  open(): Promise<KeyValue> {
    if (!this.opening) {
      const { ttlMs, readOnly } = this.options;
      const opening = this.bus.kv(this.bucket, {
        ...(ttlMs === undefined ? {} : { ttlMs }),
        ...(readOnly ? { readOnly } : {}),
      });
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
      this.opening = opening;
    }
    return this.opening;
  }

  async get(key: string): Promise<KvRecord<T> | undefined> {
    const entry = await (await this.open()).get(key);
    return entry && { key, value: this.codec.decode(entry.value), revision: entry.revision };
  }

  /** Sets unconditionally; the new revision. */
  async put(key: string, value: T): Promise<number> {
    return (await this.open()).put(key, this.codec.encode(value));
  }

  /** Creates the record if there is none; undefined when one exists (another writer got there first). */
  create(key: string, value: T): Promise<number | undefined> {
    return this.compareAndSet(key, value, 0);
  }

  /**
   * Writes `value` only if the record is still at `revision` (0: only if there is none); the new
   * revision, or undefined when another writer came in between.
   */
  async compareAndSet(key: string, value: T, revision: number): Promise<number | undefined> {
    const kv = await this.open();
    const bytes = this.codec.encode(value);
    try {
      return revision === 0 ? await kv.create(key, bytes) : await kv.update(key, bytes, revision);
    } catch (error) {
      if (error instanceof KvConflictError) return undefined;
      throw error;
    }
  }

  /**
   * Compare-and-set loop: `change` gets the record as it stands and answers its new value, or
   * undefined to leave it as it is. Another writer in between makes it read and change again (up
   * to `attempts`, 25 by default). `from`, a record read just before, saves the first read.
   * Resolves with what was written, or undefined when `change` left the record as it was.
   */
  async update(key: string, change: Change<T>, from?: KvRecord<T> | null): Promise<KvRecord<T> | undefined> {
    const attempts = this.options.attempts ?? KV_UPDATE_ATTEMPTS;
    for (let attempt = 0; attempt < attempts; attempt++) {
      const current = attempt === 0 && from !== undefined ? (from ?? undefined) : await this.get(key);
      const value = change(current);
      if (value === undefined) return undefined;
      const revision = await this.compareAndSet(key, value, current?.revision ?? 0);
      if (revision !== undefined) return { key, value, revision };
    }
    throw new Error(`${this.bucket} record ${key} kept changing concurrently`);
  }

  async delete(key: string): Promise<void> {
    await (await this.open()).delete(key);
  }

  /** Deletes every record matching `keyPattern` and erases their values; how many it deleted. */
  async deleteMatching(keyPattern: string): Promise<number> {
    return (await this.open()).deleteMatching(keyPattern);
  }

  /**
   * Calls `onChange` with the later states of records matching `keyPattern` (NATS wildcards): the
   * last state of each always, a state overwritten before the watcher took it not always
   * (`KeyValue.watch`).
   */
  async watch(
    keyPattern: string,
    onChange: (change: { key: string; value: T | undefined } | { key: string; deleted: true }) => void,
  ): Promise<Closable> {
    return (await this.open()).watch(keyPattern, (change) =>
      onChange("deleted" in change ? change : { key: change.key, value: this.codec.decode(change.value) }),
    );
  }
}
