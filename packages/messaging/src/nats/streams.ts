/**
 * The JetStream streams the bus relies on, made or brought to their settings, and led.
 */

import { askAgain } from "@cheese/ask-again";
import {
  ErrorCode,
  type JetStreamManager,
  type NatsConnection,
  NatsError,
  StorageType,
  type StreamConfig,
  type StreamInfo,
} from "nats";
import type { BusLogger } from "../log.ts";
import { BusUnavailableError } from "../port.ts";
import {
  apiErrorCode,
  INSUFFICIENT_RESOURCES,
  NO_PEERS_FOR_PLACEMENT,
  REPLICAS_NOT_SUPPORTED,
  ReplicasRefusedError,
  STREAM_NAME_IN_USE,
  STREAM_NOT_FOUND,
  SUBJECTS_OVERLAP,
} from "./errors.ts";

/** The settings of a stream this bus makes sure of; `num_replicas` is added by {@link StreamSettings}. */
type WantedStream = Partial<
  Pick<StreamConfig, "subjects" | "duplicate_window" | "max_age" | "max_bytes" | "max_msgs">
>;

/** How long {@link StreamSettings.ensure} waits for a stream's leader (an election takes ~1 s). */
const LEADER_WAIT_MS = 30_000;

/**
 * A JetStream API request that makes or opens a stream, asked again while it times out, for up
 * to {@link LEADER_WAIT_MS}, each retry logged; any other failure is thrown at once. nats-server
 * answers nothing about a replicated stream just made (by another client) until its first leader
 * is elected: a second on a quiet cluster, past the request's 5 s time-out on a loaded one (a
 * service starting beside nine others on a fresh cluster once exited with that time-out). Nor
 * does a server that stalls. Each request asked again here is idempotent: an `add` of a stream
 * already made with the same settings answers it as it is. Still unanswered after that: a
 * {@link BusUnavailableError} (503).
 */
export function untilAnswered<T>(what: string, log: BusLogger, ask: () => Promise<T>): Promise<T> {
  const timedOut = (error: unknown) => error instanceof NatsError && error.code === ErrorCode.Timeout;
  return askAgain(ask, {
    pauseMs: 100,
    forMs: LEADER_WAIT_MS,
    retryOn: timedOut,
    onRetry: () => log.warn({ what }, `${what}: JetStream did not answer in time; asking again`),
  }).catch((error: unknown) => {
    if (timedOut(error)) throw new BusUnavailableError(`${what}: no answer from JetStream`, error);
    throw error;
  });
}

/**
 * Makes the streams this bus relies on (`EVENTS`, each key-value bucket's `KV_<bucket>`) have
 * the replica count and limits configured: creates a stream that is missing, and updates one
 * made earlier with other settings (every setting here is one JetStream lets a stream change,
 * the replica count included on a clustered server), logging one line naming what it changed.
 */
export class StreamSettings {
  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    readonly replicas: number,
    private readonly log: BusLogger,
  ) {}

  /**
   * Makes the stream, or brings an existing one to `wanted`, and returns once it has a leader:
   * a replicated stream just made (or just moved) has none for a moment, and a read or write
   * of it then waits for its whole time-out (a service starting on a fresh cluster failed its
   * first key-value read so, and exited).
   */
  ensure(name: string, wanted: WantedStream): Promise<void> {
    return afterRacedAdds(() => this.ensureOnce(name, wanted));
  }

  private async ensureOnce(name: string, wanted: WantedStream): Promise<void> {
    const config = { ...wanted, num_replicas: this.replicas };
    let info: StreamInfo;
    try {
      info = await untilAnswered(`stream ${name}`, this.log, () => this.jsm.streams.info(name));
    } catch (error) {
      if (apiErrorCode(error) !== STREAM_NOT_FOUND) throw error;
      this.assertClustered();
      // Several services may race to create it. An identical config makes `add` idempotent once
      // the stream exists, but while another's `add` is still under way the server may refuse
      // this one (subjects overlap, name in use): `ensure` then reads it again.
      await untilAnswered(`stream ${name}`, this.log, () =>
        this.jsm.streams.add({ name, storage: StorageType.File, ...config }),
      ).catch((refused) => this.rethrowRefused(refused));
      return this.led(name);
    }
    const current = info.config;
    const changes = Object.entries(config).flatMap(([key, value]) => {
      const was = current[key as keyof StreamConfig];
      return String(was) === String(value) ? [] : [`${key} ${shown(key, was)} → ${shown(key, value)}`];
    });
    if (changes.length > 0) {
      if (current.num_replicas !== config.num_replicas) this.assertClustered();
      await untilAnswered(`stream ${name}`, this.log, () =>
        this.jsm.streams.update(name, { ...current, ...config }),
      ).catch((e) => this.rethrowRefused(e));
      this.log.info({ stream: name, changes }, `stream ${name} updated: ${changes.join(", ")}`);
      return this.led(name);
    }
    // Unchanged and led already (the usual start): the info just read says so, no second ask.
    if (info.cluster?.leader || !this.nc.info?.cluster) return;
    return this.led(name);
  }

  /** Resolves once the stream has a leader (at once outside a cluster); else a 503 after a while. */
  private async led(name: string): Promise<void> {
    if (!this.nc.info?.cluster) return;
    await askAgain(
      async () => {
        const info = await this.jsm.streams.info(name).catch(() => undefined);
        if (!info?.cluster?.leader) throw new BusUnavailableError(`stream ${name} has no leader`);
      },
      { pauseMs: 100, forMs: LEADER_WAIT_MS, retryOn: (error) => error instanceof BusUnavailableError },
    );
  }

  /**
   * A server outside any cluster refuses to create a stream of more than one replica, but accepts
   * raising an existing stream's count and keeps one copy all the same (nats-server 2.9).
   */
  private assertClustered(): void {
    if (this.replicas > 1 && !this.nc.info?.cluster)
      throw new ReplicasRefusedError(this.replicas, "the NATS server is not part of a cluster");
  }

  rethrowRefused(error: unknown): never {
    const code = apiErrorCode(error);
    const tooFewServers = code === INSUFFICIENT_RESOURCES || code === NO_PEERS_FOR_PLACEMENT;
    if (code === REPLICAS_NOT_SUPPORTED || (tooFewServers && this.replicas > 1))
      throw new ReplicasRefusedError(this.replicas, (error as NatsError).message);
    throw error;
  }
}

/**
 * Whether a stream's `add` was refused because another client's `add` of the same stream was
 * under way (subjects overlap, or its name in use): the stream exists now, or is about to.
 */
function lostRacedAdd(error: unknown): boolean {
  const code = apiErrorCode(error);
  return code === SUBJECTS_OVERLAP || code === STREAM_NAME_IN_USE;
}

/**
 * `make` (which reads the stream first, and adds it only when missing) asked again while its
 * `add` loses to another client's still under way: on a loaded cluster a stream being made can
 * stay unseen for more than one ask (a service starting beside nine others exited on the second
 * refusal). Within the leader wait; still refused after it, the refusal is thrown.
 */
export function afterRacedAdds<T>(make: () => Promise<T>): Promise<T> {
  return askAgain(make, { pauseMs: 100, forMs: LEADER_WAIT_MS, retryOn: lostRacedAdd });
}

/** A stream setting as the log line shows it: durations in seconds, the rest as they are. */
function shown(key: string, value: unknown): string {
  if (value === undefined) return "unset";
  if ((key === "max_age" || key === "duplicate_window") && typeof value === "number")
    return `${value / 1e9}s`;
  return Array.isArray(value) ? value.join(",") : String(value);
}
