/**
 * How the NATS client's and JetStream's errors read as the bus's: the connection refused, a replica
 * count the cluster cannot keep, JetStream's API error codes, and the server out of reach.
 */
import { NatsError } from "nats";
import { BusUnavailableError } from "../port.ts";

/**
 * NATS refused the connection: its credentials are missing, unknown or not allowed. A
 * configuration mistake, not an outage: retrying cannot help.
 */
export class BusAuthorizationError extends Error {
  override readonly name = "BusAuthorizationError";
  constructor(cause: unknown) {
    super(`NATS refused the connection's credentials: ${(cause as Error).message}`);
    this.cause = cause;
  }
}

/**
 * The replica count asked of JetStream (`NatsBusOptions.replicas`) is one the server cannot
 * give: more than 1 on a server that is not part of a cluster, or more than the cluster has
 * JetStream servers. A configuration mistake, not an outage: retrying cannot help.
 */
export class ReplicasRefusedError extends Error {
  override readonly name = "ReplicasRefusedError";
  constructor(
    readonly replicas: number,
    reason: string,
  ) {
    super(`JetStream cannot keep ${replicas} replicas: ${reason}`);
  }
}

/**
 * The JetStream API error codes of "wrong last sequence": a KV compare-and-set lost. 10071 names
 * the key's current sequence. 10164 names none: a replicated stream (nats-server 2.11 on) gives it
 * when another write expecting a sequence of the same key is still in flight, as when two
 * replicas record the same key at once. nats.js 2.29 knows only the first.
 */
export const WRONG_LAST_SEQUENCE = new Set([10071, 10164]);
export const STREAM_NOT_FOUND = 10059;
/** A message refused because another publish of its id is still in flight (a replicated stream). */
export const DUPLICATE_IN_PROCESS = 10158;
export const CONSUMER_NOT_FOUND = 10014;
/** A consumer's create refused: one of that name exists with another configuration (2.10 on). */
export const CONSUMER_EXISTS = 10148;
/** `add` refused while another's `add` of the same stream is under way. */
export const STREAM_NAME_IN_USE = 10058;
export const SUBJECTS_OVERLAP = 10065;
/**
 * What JetStream answers a replica count it cannot give: "replicas > 1 not supported in
 * non-clustered mode", "insufficient resources" and "no suitable peers for placement" (fewer
 * servers than replicas; the first on creation, the second on an update).
 */
export const REPLICAS_NOT_SUPPORTED = 10074;
export const INSUFFICIENT_RESOURCES = 10023;
export const NO_PEERS_FOR_PLACEMENT = 10005;
/**
 * A message get or delete found no message there; a replicated stream's failed delete says it
 * otherwise (see `messageGone`).
 */
export const NO_MESSAGE_FOUND = 10037;
const MESSAGE_DELETE_FAILED = 10057;

/** Client error codes that mean the server is out of reach, not that the operation was wrong. */
const UNREACHABLE = new Set(["TIMEOUT", "503", "DISCONNECT", "CONNECTION_CLOSED", "CONNECTION_REFUSED"]);

/** What an operation attempted while the connection is down fails with. */
export function disconnected(what: string): BusUnavailableError {
  return new BusUnavailableError(`${what}: not connected (reconnecting)`);
}

/** Rethrows a NATS error that means "server out of reach" as {@link BusUnavailableError}. */
export function rethrowUnreachable(error: unknown, what: string): never {
  if (error instanceof NatsError && UNREACHABLE.has(error.code)) throw new BusUnavailableError(what, error);
  throw error;
}

/** The JetStream API error code a failed JetStream request carries (`err_code`), if any. */
export function apiErrorCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}

/**
 * Whether a message delete failed because the message was gone already: 10037 from one server, a
 * failed delete (10057) saying "no message found" from a replicated stream.
 */
export function messageGone(error: unknown): boolean {
  const code = apiErrorCode(error);
  return (
    code === NO_MESSAGE_FOUND ||
    (code === MESSAGE_DELETE_FAILED && (error as NatsError).api_error?.description === "no message found")
  );
}
