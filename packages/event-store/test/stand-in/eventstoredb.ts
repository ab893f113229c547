/**
 * A stand-in for EventStoreDB's gRPC Streams service, for tests where no EventStoreDB can run.
 * It speaks the protocol of the official client (the client's own generated message classes and
 * service definition), so the adapter runs unchanged against it, and it copies the server's
 * behaviour where our adapter depends on it (as read in EventStoreDB's source):
 * - positions are byte offsets in a log, not a count of events;
 * - $all holds every event ever written, system ones included; soft delete only writes
 *   `{"$tb": long.MaxValue}` to `$$<stream>`; the next append to the stream writes the events,
 *   then `{"$tb": <first new revision>}`; reads of the stream apply truncate-before, $all does not;
 * - reading $all from a position includes the event there; a subscription from a position
 *   starts after it; reads end after `count` events;
 * - a subscription sends a confirmation, its catch-up, a caught-up marker, then live events, and
 *   a checkpoint after every `max window x multiplier` events of $all it has looked at;
 * - errors travel as trailers (`exception`, `stream-name`, `expected-version`, `actual-version`);
 * - at most 100 concurrent calls per HTTP/2 connection (the server's default).
 * Not copied: authentication, links, projections, event-type filters, persistent subscriptions.
 * - a node that is not the leader refuses with the trailers `exception: not-leader` and the
 *   leader's `leader-endpoint-host` / `-port` (here: this server, as if it had just been elected).
 * Test hooks: end every live subscription cleanly, stall reads, count the calls still open, refuse
 * the next calls as not-leader, go away (the port closed, every call cut) and come back on the
 * same port with the same events.
 */
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import type { ReadReq, ReadResp } from "@eventstore/db-client/generated/streams_pb.js";
import * as grpc from "@grpc/grpc-js";

const require = createRequire(import.meta.url);
const clientMain = require.resolve("@eventstore/db-client");
const fromClient = createRequire(clientMain);
// biome-ignore lint/suspicious/noExplicitAny: generated CommonJS modules without usable typings here
const pb: any = fromClient("../generated/streams_pb.js");
// biome-ignore lint/suspicious/noExplicitAny: as above
const shared: any = fromClient("../generated/shared_pb.js");
// biome-ignore lint/suspicious/noExplicitAny: as above
const services: any = fromClient("../generated/streams_grpc_pb.js");

const LONG_MAX = "9223372036854775807";

interface LoggedEvent {
  id: string;
  stream: string;
  revision: number;
  type: string;
  contentType: string;
  data: Buffer;
  customMetadata: Buffer;
  position: number;
  created: bigint;
}

interface StreamState {
  last: number;
  /** 0: none; LONG_MAX as Infinity: soft deleted; otherwise the first revision still readable. */
  truncateBefore: number;
}

interface LiveSubscription {
  call: grpc.ServerWritableStream<ReadReq, ReadResp>;
  matches(event: LoggedEvent): boolean;
  interval: number;
  counter: number;
  live: boolean;
  backlog: LoggedEvent[];
}

export interface EventStoreDbStandIn {
  connectionString: string;
  /** Ends every subscription call with status OK, as a server may (the client sees a clean end). */
  endSubscriptions(): void;
  /** While stalled, new read calls get no answer at all. */
  stall(stalled: boolean): void;
  /** The next `calls` reads, appends and deletes answer not-leader, naming this server as the leader. */
  answerNotLeader(calls: number): void;
  /** Stops serving: the port is closed and every open call is cut, as when the server dies. */
  goAway(): Promise<void>;
  /** Serves again on the same port, with every event written before it went away. */
  comeBack(): Promise<void>;
  /** Read and subscription calls the server still serves (not ended, not cancelled by the client). */
  openCalls(): { reads: number; subscriptions: number };
  /** How many events subscriptions have sent to clients so far. */
  eventsSent(): number;
  /** How many events reads (not subscriptions) have sent to clients so far. */
  eventsRead(): number;
  close(): Promise<void>;
}

export async function startEventStoreDbStandIn(): Promise<EventStoreDbStandIn> {
  const log: LoggedEvent[] = [];
  const streams = new Map<string, StreamState>();
  let nextPosition = 1_000;
  const subscriptions = new Set<LiveSubscription>();
  const openReads = new Set<grpc.ServerWritableStream<ReadReq, ReadResp>>();
  let stalled = false;
  let notLeaderCalls = 0;
  let port = 0;

  /** A not-leader refusal, when one is due (see `answerNotLeader`). */
  const notLeader = (): grpc.ServiceError | undefined => {
    if (notLeaderCalls <= 0) return undefined;
    notLeaderCalls -= 1;
    const metadata = new grpc.Metadata();
    metadata.set("exception", "not-leader");
    metadata.set("leader-endpoint-host", "127.0.0.1");
    metadata.set("leader-endpoint-port", String(port));
    return Object.assign(new Error("not leader"), {
      code: grpc.status.NOT_FOUND,
      details: "Leader info available",
      metadata,
    });
  };
  let sent = 0;
  let readCount = 0;

  const write = (stream: string, type: string, data: Buffer, customMetadata: Buffer, id = randomUUID()) => {
    const state = streams.get(stream) ?? { last: -1, truncateBefore: 0 };
    const event: LoggedEvent = {
      id,
      stream,
      revision: state.last + 1,
      type,
      contentType: "application/json",
      data,
      customMetadata,
      position: nextPosition,
      created: BigInt(Date.now()) * 10_000n,
    };
    // A record's size: what makes positions byte offsets, far apart and uneven.
    nextPosition += 120 + stream.length + type.length + data.length + customMetadata.length;
    state.last = event.revision;
    streams.set(stream, state);
    log.push(event);
    for (const subscription of subscriptions) deliverLive(subscription, event);
    return event;
  };

  const writeMetadata = (stream: string, truncateBefore: string) =>
    write(`$$${stream}`, "$metadata", Buffer.from(`{"$tb":${truncateBefore}}`), Buffer.alloc(0));

  const isSoftDeleted = (state: StreamState | undefined) =>
    state?.truncateBefore === Number.POSITIVE_INFINITY;

  function toResp(event: LoggedEvent): ReadResp {
    const recorded = new pb.ReadResp.ReadEvent.RecordedEvent();
    const id = new shared.UUID();
    id.setString(event.id);
    recorded.setId(id);
    const identifier = new shared.StreamIdentifier();
    identifier.setStreamName(Buffer.from(event.stream));
    recorded.setStreamIdentifier(identifier);
    recorded.setStreamRevision(String(event.revision));
    recorded.setPreparePosition(String(event.position));
    recorded.setCommitPosition(String(event.position));
    recorded.getMetadataMap().set("type", event.type);
    recorded.getMetadataMap().set("content-type", event.contentType);
    recorded.getMetadataMap().set("created", String(event.created));
    recorded.setData(event.data);
    recorded.setCustomMetadata(event.customMetadata);
    const readEvent = new pb.ReadResp.ReadEvent();
    readEvent.setEvent(recorded);
    readEvent.setCommitPosition(String(event.position));
    const resp = new pb.ReadResp();
    resp.setEvent(readEvent);
    return resp;
  }

  function checkpointResp(position: number): ReadResp {
    const checkpoint = new pb.ReadResp.Checkpoint();
    checkpoint.setCommitPosition(String(position));
    checkpoint.setPreparePosition(String(position));
    const resp = new pb.ReadResp();
    resp.setCheckpoint(checkpoint);
    return resp;
  }

  /** Sends one event of $all to a subscription: the event if it matches, a checkpoint when due. */
  function offer(subscription: LiveSubscription, event: LoggedEvent): void {
    if (subscription.call.cancelled) return;
    if (subscription.matches(event)) {
      sent += 1;
      subscription.call.write(toResp(event));
    }
    subscription.counter += 1;
    if (subscription.counter >= subscription.interval) {
      subscription.counter = 0;
      subscription.call.write(checkpointResp(event.position));
    }
  }

  function deliverLive(subscription: LiveSubscription, event: LoggedEvent): void {
    if (subscription.live) offer(subscription, event);
    else subscription.backlog.push(event);
  }

  function read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const options = call.request.getOptions()!;
    if (options.hasSubscription()) {
      subscribe(call);
      return;
    }
    const refusal = notLeader();
    if (refusal) {
      call.emit("error", refusal);
      return;
    }
    openReads.add(call);
    const finish = () => openReads.delete(call);
    call.on("cancelled", finish);
    call.on("finish", finish);
    call.on("close", finish);
    if (stalled) return; // never answers: the client's cancel is the only way out
    const count = Number(options.getCount());
    const backwards = options.getReadDirection() === 1;
    let events: LoggedEvent[];
    if (options.hasStream()) {
      const streamOptions = options.getStream()!;
      const name = Buffer.from(streamOptions.getStreamIdentifier()!.getStreamName_asU8()).toString();
      const state = streams.get(name);
      if (!state || isSoftDeleted(state) || state.last < state.truncateBefore) {
        const notFound = new pb.ReadResp.StreamNotFound();
        notFound.setStreamIdentifier(streamOptions.getStreamIdentifier());
        const resp = new pb.ReadResp();
        resp.setStreamNotFound(notFound);
        call.write(resp);
        call.end();
        return;
      }
      const visible = log.filter((event) => event.stream === name && event.revision >= state.truncateBefore);
      if (backwards) {
        const from = streamOptions.hasEnd() ? Number.POSITIVE_INFINITY : Number(streamOptions.getRevision());
        events = visible.filter((event) => event.revision <= from).reverse();
      } else {
        const from = streamOptions.hasStart() ? 0 : Number(streamOptions.getRevision());
        events = visible.filter((event) => event.revision >= from);
      }
    } else {
      const all = options.getAll()!;
      if (backwards) {
        const from = all.hasPosition()
          ? Number(all.getPosition()!.getCommitPosition())
          : Number.POSITIVE_INFINITY;
        events = log.filter((event) => event.position < from).reverse();
      } else {
        const from = all.hasPosition() ? Number(all.getPosition()!.getCommitPosition()) : 0;
        events = log.filter((event) => all.hasStart() || event.position >= from);
      }
    }
    for (const event of events.slice(0, count)) {
      readCount += 1;
      call.write(toResp(event));
    }
    call.end();
  }

  function subscribe(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const options = call.request.getOptions()!;
    const all = options.getAll();
    if (!all) {
      call.destroy(new Error("the stand-in serves subscriptions to $all only"));
      return;
    }
    let matches: (event: LoggedEvent) => boolean = () => true;
    let interval = Number.POSITIVE_INFINITY;
    if (options.hasFilter()) {
      const filter = options.getFilter()!;
      const expression = filter.getStreamIdentifier();
      if (!expression) {
        call.destroy(new Error("the stand-in filters on stream names only"));
        return;
      }
      const prefixes: string[] = expression.getPrefixList();
      const regex = expression.getRegex() ? new RegExp(expression.getRegex()) : undefined;
      matches = (event) =>
        prefixes.some((prefix) => event.stream.startsWith(prefix)) || (regex?.test(event.stream) ?? false);
      const window = filter.hasMax() ? filter.getMax() : 32;
      interval = window * Math.max(1, filter.getCheckpointintervalmultiplier());
    }
    const subscription: LiveSubscription = { call, matches, interval, counter: 0, live: false, backlog: [] };
    subscriptions.add(subscription);
    const stop = () => subscriptions.delete(subscription);
    call.on("cancelled", stop);
    call.on("close", stop);
    const confirmation = new pb.ReadResp.SubscriptionConfirmation();
    confirmation.setSubscriptionId(randomUUID());
    const confirmed = new pb.ReadResp();
    confirmed.setConfirmation(confirmation);
    call.write(confirmed);
    const from = all.hasEnd()
      ? Number.POSITIVE_INFINITY
      : all.hasPosition()
        ? Number(all.getPosition()!.getCommitPosition())
        : -1;
    // Catch-up: everything after the position, in pages, then the marker, then what came meanwhile.
    const history = log.filter((event) => event.position > from);
    setImmediate(() => {
      if (call.cancelled || !subscriptions.has(subscription)) return;
      for (const event of history) offer(subscription, event);
      const caughtUp = new pb.ReadResp();
      caughtUp.setCaughtUp(new pb.ReadResp.CaughtUp());
      call.write(caughtUp);
      subscription.live = true;
      for (const event of subscription.backlog.splice(0)) offer(subscription, event);
    });
  }

  function expectationFailure(
    name: string,
    options: {
      hasAny(): boolean;
      hasNoStream(): boolean;
      hasStreamExists?(): boolean;
      getRevision(): string;
      hasRevision(): boolean;
    },
  ): { current: number | "no_stream" } | "deleted" | undefined {
    const state = streams.get(name);
    const deleted = isSoftDeleted(state);
    const current: number | "no_stream" = !state || deleted ? "no_stream" : state.last;
    if (options.hasAny()) return undefined;
    if (options.hasNoStream()) return current === "no_stream" ? undefined : { current };
    if (options.hasStreamExists?.()) {
      if (deleted) return "deleted";
      return current === "no_stream" ? { current } : undefined;
    }
    return current === Number(options.getRevision()) ? undefined : { current };
  }

  function append(
    call: grpc.ServerReadableStream<unknown, unknown>,
    callback: grpc.sendUnaryData<unknown>,
  ): void {
    // biome-ignore lint/suspicious/noExplicitAny: generated message classes
    const messages: any[] = [];
    call.on("data", (message) => messages.push(message));
    call.on("end", () => {
      const refusal = notLeader();
      if (refusal) {
        callback(refusal);
        return;
      }
      const options = messages[0].getOptions();
      const name = Buffer.from(options.getStreamIdentifier().getStreamName_asU8()).toString();
      const failure = expectationFailure(name, options);
      if (failure === "deleted") {
        callback(streamDeleted(name));
        return;
      }
      const resp = new pb.AppendResp();
      if (failure) {
        const wrong = new pb.AppendResp.WrongExpectedVersion();
        if (failure.current === "no_stream") wrong.setCurrentNoStream(new shared.Empty());
        else wrong.setCurrentRevision(String(failure.current));
        if (options.hasNoStream()) wrong.setExpectedNoStream(new shared.Empty());
        else if (options.hasStreamExists()) wrong.setExpectedStreamExists(new shared.Empty());
        else wrong.setExpectedRevision(options.getRevision());
        resp.setWrongExpectedVersion(wrong);
        callback(null, resp);
        return;
      }
      const state = streams.get(name);
      const undelete = isSoftDeleted(state);
      const firstNew = (state?.last ?? -1) + 1;
      let last: LoggedEvent | undefined;
      for (const message of messages.slice(1)) {
        const proposed = message.getProposedMessage();
        const metadata = proposed.getMetadataMap();
        last = write(
          name,
          metadata.get("type"),
          Buffer.from(proposed.getData_asU8()),
          Buffer.from(proposed.getCustomMetadata_asU8()),
          proposed.getId().getString(),
        );
        last.contentType = metadata.get("content-type");
      }
      // The server undeletes after writing: the new truncate-before comes after the new events.
      if (undelete && state && last) {
        state.truncateBefore = firstNew;
        writeMetadata(name, String(firstNew));
      }
      const success = new pb.AppendResp.Success();
      const current = streams.get(name)?.last ?? -1;
      if (current < 0) success.setNoStream(new shared.Empty());
      else success.setCurrentRevision(String(current));
      const position = new pb.AppendResp.Position();
      const at = last?.position ?? nextPosition;
      position.setCommitPosition(String(at));
      position.setPreparePosition(String(at));
      success.setPosition(position);
      resp.setSuccess(success);
      callback(null, resp);
    });
  }

  function remove(call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>): void {
    // biome-ignore lint/suspicious/noExplicitAny: generated message classes
    const options = (call.request as any).getOptions();
    const refusal = notLeader();
    if (refusal) {
      callback(refusal);
      return;
    }
    const name = Buffer.from(options.getStreamIdentifier().getStreamName_asU8()).toString();
    const failure = expectationFailure(name, options);
    if (failure === "deleted") {
      callback(streamDeleted(name));
      return;
    }
    if (failure) {
      const metadata = new grpc.Metadata();
      metadata.set("exception", "wrong-expected-version");
      metadata.set("stream-name", name);
      metadata.set("expected-version", options.hasNoStream() ? "-1" : options.getRevision());
      if (failure.current !== "no_stream") metadata.set("actual-version", String(failure.current));
      callback({ code: grpc.status.FAILED_PRECONDITION, details: "wrong expected version", metadata });
      return;
    }
    const state = streams.get(name) ?? { last: -1, truncateBefore: 0 };
    state.truncateBefore = Number.POSITIVE_INFINITY;
    streams.set(name, state);
    const event = writeMetadata(name, LONG_MAX);
    const resp = new pb.DeleteResp();
    const position = new pb.DeleteResp.Position();
    position.setCommitPosition(String(event.position));
    position.setPreparePosition(String(event.position));
    resp.setPosition(position);
    callback(null, resp);
  }

  function streamDeleted(name: string): grpc.ServiceError {
    const metadata = new grpc.Metadata();
    metadata.set("exception", "stream-deleted");
    metadata.set("stream-name", name);
    return Object.assign(new Error("stream deleted"), {
      code: grpc.status.FAILED_PRECONDITION,
      details: "stream deleted",
      metadata,
    });
  }

  const listen = async (at: number) => {
    const server = new grpc.Server({ "grpc.max_concurrent_streams": 100 });
    server.addService(services.StreamsService, {
      read,
      append,
      delete: remove,
      tombstone: (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
        callback({ code: grpc.status.UNIMPLEMENTED, details: "not in the stand-in" }),
      batchAppend: (call: grpc.ServerDuplexStream<unknown, unknown>) =>
        call.destroy(Object.assign(new Error("not in the stand-in"), { code: grpc.status.UNIMPLEMENTED })),
    });
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${at}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    return server;
  };
  let server: grpc.Server | undefined = await listen(0);
  const shutDown = async () => {
    const stopping = server;
    server = undefined;
    if (!stopping) return;
    stopping.forceShutdown();
    subscriptions.clear();
    openReads.clear();
  };

  return {
    connectionString: `esdb://127.0.0.1:${port}?tls=false`,
    endSubscriptions() {
      for (const subscription of [...subscriptions]) {
        subscriptions.delete(subscription);
        if (!subscription.call.cancelled) subscription.call.end();
      }
    },
    stall(value) {
      stalled = value;
    },
    answerNotLeader(calls) {
      notLeaderCalls = calls;
    },
    goAway: shutDown,
    async comeBack() {
      server ??= await listen(port);
    },
    openCalls: () => ({ reads: openReads.size, subscriptions: subscriptions.size }),
    eventsSent: () => sent,
    eventsRead: () => readCount,
    async close() {
      const stopping = server;
      if (stopping) await new Promise<void>((resolve) => stopping.tryShutdown(() => resolve()));
      await shutDown();
    },
  };
}
