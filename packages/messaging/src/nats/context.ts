/**
 * The context the NATS bus hands its parts: a leaf module, types only.
 */
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import type { BusLogger } from "../log.ts";
import type { BusUnavailableError, Closable, KeyValue } from "../port.ts";
import type { Link } from "./link.ts";
import type { ReplyInbox } from "./reply-inbox.ts";
import type { StreamSettings } from "./streams.ts";

/**
 * What the parts of the bus (its consumers, notice channels, followers and key-value buckets)
 * share of it: the connection and JetStream, the reply inbox, the stream settings, the log, and
 * the connection's state. The bus makes one (`NatsBus.context`) and hands it to each part it
 * makes.
 */
export interface BusContext {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly js: JetStreamClient;
  readonly replies: ReplyInbox;
  readonly streams: StreamSettings;
  readonly log: BusLogger;
  readonly link: Link;
  /** Throws {@link BusUnavailableError} while the connection is down. */
  reachable(what: string): void;
  /** False from a disconnect until the client has reconnected. */
  connected(): boolean;
  /** Waits for `work` while connected, and no longer once the connection drops. */
  whileUp(work: () => Promise<unknown>): Promise<void>;
  /** Closed with the bus. */
  register(closable: Closable): Closable;
  /** A key-value bucket of the bus (`MessageBus.kv`). */
  kv(bucket: string): Promise<KeyValue>;
}
