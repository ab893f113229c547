import { askAgain } from "@cheese/ask-again";
import type { EventMetadata, EventStore, RecordedEvent } from "@cheese/event-store";
import { RemoteError, type RemoteErrorBody } from "@cheese/messaging";
import { type Clock, isoNow } from "./clock.ts";
import { type Decider, type DomainEvent, handleCommand } from "./decider.ts";
import { conflict, DomainError } from "./errors.ts";

/**
 * Idempotency claims: "do this once per Idempotency-Key", across retries, replicas and crashes.
 * The one idempotency mechanism of the system: the gateway only reads the header and passes the
 * scoped key down (docs/architecture.md "Idempotency claims").
 *
 * The first request of a key appends `Claimed` (the id it will create, the request's
 * fingerprint, the time) to `<category>-<key>` with an expected revision, so of racing requests
 * exactly one claims. Rules, the same for every service:
 *  - a repeat answers what the first request made (`earlier`: the first event of the stream the
 *    work created, which the use case answers from), or the refusal it met
 *    (`ClaimRefused`, recorded for a 4xx: a 422 stays a 422 for that key);
 *  - the same key with another fingerprint is 409 while the claim counts;
 *  - takeover: a repeat waits for the first request's result until `claimedAt` + 3 s, then does
 *    the work itself under the claimed id (so there is still only one);
 *  - staleness: a claim counts for 24 h after `claimedAt`; after that the key is new.
 */

/** What the gateway passes down with an Idempotency-Key (already scoped to the caller). */
export interface IdempotencyKey {
  /** sha256 (hex) of caller and Idempotency-Key. */
  key: string;
  /** Of method, path and canonical body; the same key with another body is 409. */
  fingerprint: string;
}

export const CLAIM_TAKEOVER_AFTER_MS = 3000;
export const CLAIM_LAPSES_AFTER_MS = 24 * 3_600_000;
export const KEY_REUSED = "this Idempotency-Key was already used with a different request";

export interface ClaimRecord {
  id: number;
  fingerprint: string;
  /** Absent in claims recorded before claims had a time: those never lapse. */
  claimedAt?: string;
}

export type ClaimEvent =
  | DomainEvent<"Claimed", ClaimRecord>
  | DomainEvent<"ClaimRefused", { id: number; refusal: RemoteErrorBody }>;
export type ClaimCommand =
  | { type: "Claim"; id: number; fingerprint: string; at: string }
  | { type: "RecordRefusal"; id: number; refusal: RemoteErrorBody };
export type ClaimState = { claim?: ClaimRecord; refusal?: RemoteErrorBody };

/**
 * Events recorded before this mechanism was shared: the catalogue's `CheeseRequestClaimed`
 * (`cheeseId`) and ordering's `OrderRequestClaimed` (`orderId`, maybe without `claimedAt`).
 */
function upcast(data: Record<string, unknown>): ClaimRecord {
  const id = (data.id ?? data.cheeseId ?? data.orderId) as number;
  const claimedAt = data.claimedAt as string | undefined;
  return { id, fingerprint: data.fingerprint as string, ...(claimedAt ? { claimedAt } : {}) };
}

/** The claim that still counts at `at`, if any. */
export function liveClaim(state: ClaimState, at: string): ClaimRecord | undefined {
  const { claim } = state;
  if (!claim) return undefined;
  if (claim.claimedAt && Date.parse(at) - Date.parse(claim.claimedAt) >= CLAIM_LAPSES_AFTER_MS) {
    return undefined;
  }
  return claim;
}

export const claimDecider: Decider<ClaimState, ClaimCommand, ClaimEvent> = {
  initialState: () => ({}),
  evolve: (state, event) =>
    event.type === "ClaimRefused"
      ? state.claim?.id === event.data.id
        ? { ...state, refusal: event.data.refusal }
        : state
      : { claim: upcast(event.data as unknown as Record<string, unknown>) },
  decide(command, state) {
    if (command.type === "RecordRefusal") {
      if (state.claim?.id !== command.id || state.refusal) return [];
      return [{ type: "ClaimRefused", data: { id: command.id, refusal: command.refusal } }];
    }
    const claim = liveClaim(state, command.at);
    if (!claim) {
      const { id, fingerprint, at } = command;
      return [{ type: "Claimed", data: { id, fingerprint, claimedAt: at } }];
    }
    if (claim.fingerprint !== command.fingerprint) throw conflict(KEY_REUSED);
    return [];
  },
};

export interface Claim {
  /** The id to do the work under. */
  id: number;
  /**
   * Set when an earlier request of the key did the work: the first event of the stream it
   * created. Answer with it (the first answer, marked replayed), do nothing.
   */
  earlier?: RecordedEvent;
  /**
   * After the work under `id` failed: the first event of what a racing request of the same key
   * made meanwhile (it took over, or was taken over from), or the error again; a refusal (4xx)
   * is recorded first, so that repeats of the key answer it too.
   */
  failed(error: unknown): Promise<RecordedEvent>;
}

export interface ClaimOptions {
  /** Stream category of the claims, e.g. `cheeserequest`. */
  category: string;
  /** Without a key there is nothing to claim: the work gets a fresh id. */
  idempotency: IdempotencyKey | undefined;
  newId: () => Promise<number>;
  /**
   * Category of the stream the work creates under the id (`cheese`: `cheese-<id>`): the work is
   * done once that stream has its first event.
   */
  creates: string;
  metadata?: EventMetadata;
}

/** Poll interval while a repeat waits for the first request of its key (real time). */
const POLL_MS = 50;

/** A repeat's first request of its key is still at work, and its takeover time has not come. */
class FirstRequestAtWork extends Error {}

/** Claims the work of a request for its Idempotency-Key; see the rules above. */
export async function claimOnce(
  deps: { store: EventStore; clock: Clock },
  options: ClaimOptions,
): Promise<Claim> {
  const { idempotency } = options;
  if (!idempotency) {
    return { id: await options.newId(), failed: (error) => Promise.reject(error) };
  }
  // Most keys are new: the claim is appended unread, with `no_stream` (the key's claim stream
  // was read for every request, and nearly always found empty). A key used before has its append
  // refused and its claim read: one that lapsed is claimed again there, one with another
  // fingerprint is 409, a live one makes this request a repeat (below). A repeat's id was
  // allocated for nothing: a gap, as ids left in a block are.
  const id = await options.newId();
  const stream = `${options.category}-${idempotency.key}`;
  const { newEvents } = await handleCommand(
    deps.store,
    stream,
    claimDecider,
    { type: "Claim", id, fingerprint: idempotency.fingerprint, at: isoNow(deps.clock) },
    { metadata: options.metadata ?? {}, newStream: true },
  );
  if (newEvents.length > 0) return { id, failed: (error) => failed(deps, options, id, error) };
  // A repeat reads the claim again while the first request is at work, until its result or the takeover.
  return askAgain(() => claimOrRepeat(deps, options, idempotency), {
    pauseMs: POLL_MS,
    retryOn: (error) => error instanceof FirstRequestAtWork,
  });
}

/** One read of the key's claim: claimed now, or a repeat's answer; throws while the first is at work. */
async function claimOrRepeat(
  deps: { store: EventStore; clock: Clock },
  options: ClaimOptions,
  idempotency: IdempotencyKey,
): Promise<Claim> {
  const stream = `${options.category}-${idempotency.key}`;
  const state = (await deps.store.readStream(stream)).reduce(
    (folded, event) => claimDecider.evolve(folded, event as unknown as ClaimEvent),
    claimDecider.initialState(),
  );
  const now = isoNow(deps.clock);
  const claim = liveClaim(state, now);
  if (claim) {
    // A repeat: it answers what the first request made or met, waiting for it until the takeover.
    if (claim.fingerprint !== idempotency.fingerprint) throw conflict(KEY_REUSED);
    if (state.refusal) throw refusalOf(state.refusal);
    const earlier = await firstEvent(deps.store, options.creates, claim.id);
    const takeoverAt = claim.claimedAt ? Date.parse(claim.claimedAt) + CLAIM_TAKEOVER_AFTER_MS : 0;
    if (!earlier && Date.parse(now) < takeoverAt) throw new FirstRequestAtWork();
    const { id } = claim;
    return { id, ...(earlier ? { earlier } : {}), failed: (error) => failed(deps, options, id, error) };
  }
  const id = await options.newId();
  const { newEvents } = await handleCommand(
    deps.store,
    stream,
    claimDecider,
    { type: "Claim", id, fingerprint: idempotency.fingerprint, at: isoNow(deps.clock) },
    { metadata: options.metadata ?? {}, newStream: true }, // read empty just above
  );
  if (newEvents.length > 0) return { id, failed: (error) => failed(deps, options, id, error) };
  // A concurrent request of the key claimed first: its claim is read at once.
  return claimOrRepeat(deps, options, idempotency);
}

/** The first event of the stream the work under `id` creates, once it is done. */
async function firstEvent(store: EventStore, creates: string, id: number) {
  const [first] = await store.readStream(`${creates}-${id}`, { maxCount: 1 });
  return first;
}

/** `Claim.failed`: what a racing request made meanwhile, or the error again (a 4xx recorded). */
async function failed(
  deps: { store: EventStore },
  options: ClaimOptions,
  id: number,
  error: unknown,
): Promise<RecordedEvent> {
  const earlier = await firstEvent(deps.store, options.creates, id);
  if (earlier) return earlier;
  if (error instanceof RemoteError && error.body.status >= 400 && error.body.status < 500) {
    await handleCommand(
      deps.store,
      `${options.category}-${options.idempotency!.key}`,
      claimDecider,
      { type: "RecordRefusal", id, refusal: error.body },
      { metadata: options.metadata ?? {} },
    );
  }
  throw error;
}

/** The refusal the first request of a key met, again. */
function refusalOf({ status, type, message, errors }: RemoteErrorBody): DomainError {
  return new DomainError(status, type, message, errors);
}
