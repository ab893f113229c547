/**
 * A JetStream key-value bucket behind the bus's KeyValue port.
 */

import { askAgain } from "@cheese/ask-again";
import { type KV, NatsError } from "nats";
import { BusUnavailableError, type Closable, type KeyValue, KvConflictError } from "../port.ts";
import { assertKvKey } from "../subjects.ts";
import type { BusContext } from "./context.ts";
import { apiErrorCode, messageGone, rethrowUnreachable, WRONG_LAST_SEQUENCE } from "./errors.ts";

/**
 * How often a key-value request answered "no responders" is asked in all, and the pause between
 * (nats.js's own pause for a JetStream publish it retries); see `NatsKeyValue.answered`.
 */
const KV_NO_RESPONDERS_TRIES = 5;
const KV_NO_RESPONDERS_RETRY_MS = 250;

export class NatsKeyValue implements KeyValue {
  constructor(
    private readonly bus: BusContext,
    private readonly bucket: string,
    private readonly kv: KV,
  ) {}

  async get(key: string) {
    assertKvKey(key);
    const entry = await this.answered(`kv get ${key}`, () => this.kv.get(key)).catch((error) =>
      rethrowUnreachable(error, `kv get ${key}`),
    );
    if (entry?.operation !== "PUT") return undefined;
    return { key, value: entry.value, revision: entry.revision };
  }

  async put(key: string, value: Uint8Array): Promise<number> {
    assertKvKey(key);
    return this.answered(`kv put ${key}`, () => this.kv.put(key, value)).catch((error) =>
      rethrowUnreachable(error, `kv put ${key}`),
    );
  }

  async create(key: string, value: Uint8Array): Promise<number> {
    assertKvKey(key);
    return this.answered(`kv create ${key}`, () => this.kv.create(key, value)).catch((error) =>
      rethrowConflict(error, key),
    );
  }

  async update(key: string, value: Uint8Array, revision: number): Promise<number> {
    assertKvKey(key);
    if (revision < 1) throw new KvConflictError(key);
    return this.answered(`kv update ${key}`, () => this.kv.update(key, value, revision)).catch((error) =>
      rethrowConflict(error, key),
    );
  }

  async delete(key: string): Promise<void> {
    assertKvKey(key);
    await this.answered(`kv delete ${key}`, () => this.kv.delete(key)).catch((error) =>
      rethrowUnreachable(error, `kv delete ${key}`),
    );
  }

  /**
   * One request of the bucket, asked again while the server answers it "no responders" (503),
   * {@link KV_NO_RESPONDERS_TRIES} times in all: when several clients open a new bucket at once,
   * nats-server (2.9) may answer one whose open found the stream before that stream listens on
   * its subjects, and its first write or read then gets no responder (4 clients racing to create
   * a record in a new bucket: 15 of 300 did; each was answered 100 ms later). No responder means
   * nobody received the request, so asking again cannot write twice. Throws
   * {@link BusUnavailableError} while the connection is down, at every try.
   */
  private answered<T>(what: string, request: () => Promise<T>): Promise<T> {
    return askAgain(
      () => {
        this.bus.reachable(what);
        return request();
      },
      {
        pauseMs: KV_NO_RESPONDERS_RETRY_MS,
        tries: KV_NO_RESPONDERS_TRIES,
        retryOn: (error) => error instanceof NatsError && error.code === "503",
      },
    );
  }

  async deleteMatching(keyPattern: string): Promise<number> {
    this.bus.reachable(`kv keys ${keyPattern}`);
    const keys: string[] = [];
    try {
      for await (const key of await this.kv.keys(keyPattern)) keys.push(key);
    } catch (error) {
      rethrowUnreachable(error, `kv keys ${keyPattern}`);
    }
    for (const key of keys) {
      // The value's message is overwritten in the stream's files (a plain delete only marks it):
      // erasing its bytes goes through the bucket's stream.
      const entry = await this.kv.get(key).catch((error) => rethrowUnreachable(error, `kv get ${key}`));
      if (entry?.operation === "PUT") {
        await this.bus.jsm.streams.deleteMessage(`KV_${this.bucket}`, entry.revision, true).catch((error) => {
          if (!messageGone(error)) throw error;
        });
      }
      await this.delete(key);
    }
    return keys.length;
  }

  /**
   * The NATS watcher starts asynchronously, so it asks for the last values too and keeps those
   * written since `watch` was called, by server timestamp (same clock on one host, NTP otherwise).
   * Millisecond precision: a write in the same millisecond before the call may be reported, which
   * errs on the safe side. With history 1, two writes of one key while the watcher is starting
   * arrive as the latest only.
   */
  watch(keyPattern: string, onChange: Parameters<KeyValue["watch"]>[1]): Closable {
    const since = Date.now();
    let stopped = false;
    const started = this.kv.watch({ key: keyPattern }).then((iter) => {
      if (stopped) iter.stop();
      void (async () => {
        for await (const e of iter) {
          if (e.created.getTime() < since) continue;
          try {
            if (e.operation === "PUT") onChange({ key: e.key, value: e.value, revision: e.revision });
            else onChange({ key: e.key, deleted: true });
          } catch (err) {
            this.bus.log.error({ err, key: e.key }, "kv watch handler failed");
          }
        }
      })();
      return iter;
    });
    started.catch((err) => this.bus.log.error({ err, keyPattern }, "kv watch failed"));
    return this.bus.register({
      close: async () => {
        stopped = true;
        (await started.catch(() => undefined))?.stop();
      },
    });
  }
}

function rethrowConflict(error: unknown, key: string): never {
  if (WRONG_LAST_SEQUENCE.has(apiErrorCode(error) ?? 0)) throw new KvConflictError(key);
  rethrowUnreachable(error, `kv write ${key}`);
}
