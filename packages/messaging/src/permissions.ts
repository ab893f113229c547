/**
 * Who may do what on NATS: one identity (an nkey) per service, and one for operators and
 * monitoring, each allowed the subjects its work needs and nothing else (docs/security.md, M2).
 * The launcher's nats-servers, `deploy/nats/authorization.conf` and the dev overlay's NATS are
 * configured from {@link authorizationConfig} (`pnpm check:deploy` compares them), so this table
 * is the one place a new RPC call, bucket or consumer is allowed. Pure data: the launcher loads it
 * without the NATS client.
 */

export const natsServices = ["gateway", "catalogue", "ordering", "customer", "notification"] as const;
export type NatsService = (typeof natsServices)[number];
/**
 * Operators and monitoring: JetStream's stream and consumer info, each service's health, and
 * rebuilds of a service's projections on request (`pnpm rebuild`).
 */
export const MONITOR_IDENTITY = "monitor";
export const natsIdentities = [...natsServices, MONITOR_IDENTITY] as const;
export type NatsIdentity = (typeof natsIdentities)[number];

/** The file, in the `NATS_CREDENTIALS` directory, holding an identity's nkey seed. */
export function seedFileName(identity: string): string {
  return `${identity}.nk`;
}

/** The environment variable the server configuration reads an identity's public key from. */
export function publicKeyVariable(identity: NatsIdentity): string {
  return `NATS_NKEY_${identity.toUpperCase()}`;
}

interface Needs {
  /** The RPC subjects it asks (it serves `<service>.>`: its RPCs and `<service>.health`). */
  calls: readonly string[];
  /** It publishes `events.<service>.>` through its outbox relay (and asks after its relay lease's holder). */
  publishesEvents?: boolean;
  /** Key-value buckets it opens (its own: it makes and writes them). */
  buckets?: readonly string[];
  /** Another service's key-value buckets it reads and watches, never makes or writes. */
  readsBuckets?: readonly string[];
  /** Notice channels it announces on: it appends notices (never a lease record) and hears what lease holders applied. */
  announces?: readonly string[];
  /** Notice channels it follows: it appends its read-lease records (never a notice) and says what it applied. */
  follows?: readonly string[];
  /** Broadcast subjects it sends. */
  broadcasts?: readonly string[];
  /** Broadcast subjects it hears. */
  hearsBroadcasts?: readonly string[];
  /** It consumes integration events (durables on EVENTS, dead letters parked and replayed). */
  consumes?: boolean;
  /** It serves the operator API over the dead letters (lists, replays and deletes them). */
  managesDeadLetters?: boolean;
}

/** What each service does on the bus (docs/architecture.md, "Rooms"). */
const needs: Record<NatsService, Needs> = {
  gateway: {
    calls: ["catalogue.>", "ordering.>", "customer.>", "notification.>"],
    buckets: ["rate_limits"],
    readsBuckets: ["revocations"],
    follows: ["catalogue_cheese_changed"],
    hearsBroadcasts: ["broadcast.customer.plan_changed"],
  },
  catalogue: {
    calls: ["ordering.cheese.active_orders"],
    publishesEvents: true,
    buckets: ["publisher_checkpoints"],
    announces: ["catalogue_cheese_changed"],
  },
  ordering: {
    calls: ["catalogue.cheese.get", "customer.personal_data.seal", "customer.personal_data.open"],
    publishesEvents: true,
    buckets: ["publisher_checkpoints"],
    consumes: true,
  },
  customer: {
    calls: ["catalogue.cheese.get"],
    publishesEvents: true,
    buckets: ["publisher_checkpoints", "revocations", "oauth_codes", "oauth_refresh_tokens", "oauth_grants"],
    broadcasts: ["broadcast.customer.plan_changed"],
    consumes: true,
  },
  notification: { calls: [], buckets: ["webhook_throttle"], consumes: true, managesDeadLetters: true },
};

/**
 * The JetStream API subjects a service uses on the stream `stream` and its consumers: making sure
 * of it (made, or brought to its settings), reading it (a message by sequence or subject, its
 * last sequence), its durable and ordered consumers and their acks, and, with `erases`, removing
 * one message (a key-value value's bytes, a dead letter that was replayed or dropped). Nothing
 * that deletes or purges the stream, snapshots or restores it, moves its leaders or peers, or
 * removes one of `EVENTS`' events.
 */
function streamApi(stream: string, { erases = false }: { erases?: boolean } = {}): string[] {
  return [
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.UPDATE.${stream}`,
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    ...(erases ? [`$JS.API.STREAM.MSG.DELETE.${stream}`] : []),
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
    `$JS.ACK.${stream}.>`,
    `$JS.FC.${stream}.>`,
  ];
}

/**
 * The JetStream API subjects that read the stream `stream` and watch it (an ordered consumer),
 * and nothing that makes, changes or writes it.
 */
function readApi(stream: string): string[] {
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.>`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.FC.${stream}.>`,
  ];
}

/**
 * The JetStream API subjects both ends of a notice channel use on its stream `stream`: making
 * sure of it (made, or brought to its settings), reading its last sequence, and following it with
 * an ordered pull consumer. Nothing that deletes or purges it, removes a message, or keeps a
 * durable consumer on it.
 */
function noticeApi(stream: string): string[] {
  return [
    `$JS.API.STREAM.CREATE.${stream}`,
    `$JS.API.STREAM.UPDATE.${stream}`,
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
  ];
}

export interface Permissions {
  publish: string[];
  subscribe: string[];
}

/**
 * The subjects `identity` may publish and subscribe to. Every service serves `<service>.>` (a
 * queue group of its replicas), asks the services it calls, replies to any `_INBOX` (requests
 * come with one) and hears replies on `_INBOX.>`, makes sure `EVENTS` exists (each one may be the
 * first to start), and reaches the JetStream API only for its own streams and buckets.
 */
export function permissionsOf(identity: NatsIdentity): Permissions {
  if (identity === MONITOR_IDENTITY) {
    return {
      publish: [
        "$JS.API.INFO",
        "$JS.API.STREAM.NAMES",
        "$JS.API.STREAM.LIST",
        "$JS.API.STREAM.INFO.*",
        "$JS.API.CONSUMER.NAMES.*",
        "$JS.API.CONSUMER.LIST.*",
        "$JS.API.CONSUMER.INFO.*.*",
        ...natsServices.map((service) => `${service}.health`),
        ...natsServices.map((service) => `${service}.rebuild`),
      ],
      subscribe: ["_INBOX.>"],
    };
  }
  const need = needs[identity];
  const publish = ["_INBOX.>", "$JS.API.INFO", ...need.calls];
  const subscribe = [`${identity}.>`, "_INBOX.>"];
  publish.push(...streamApi("EVENTS"));
  // Its outbox relay publishes its events; each replica answers for itself as a relay-lease
  // holder, and a standby asks the holder (`relay.<service>.holder.<id>`).
  if (need.publishesEvents) {
    publish.push(`events.${identity}.>`, `relay.${identity}.holder.*`);
    subscribe.push(`relay.${identity}.holder.*`);
  }
  if (need.consumes || need.managesDeadLetters)
    publish.push(...streamApi("DEAD_LETTERS", { erases: true }), "deadletters.>");
  for (const bucket of need.buckets ?? [])
    publish.push(...streamApi(`KV_${bucket}`, { erases: true }), `$KV.${bucket}.>`);
  for (const bucket of need.readsBuckets ?? []) publish.push(...readApi(`KV_${bucket}`));
  // A notice channel's stream holds the announcers' notices (`notices.<channel>`) and the
  // followers' read-lease records (grants and releases, `notices.<channel>.lease`): each end
  // appends only its own, so neither can pass for the other; both follow the stream. Only followers
  // say on `.applied` what they applied, and only announcers hear it.
  for (const channel of need.announces ?? []) {
    publish.push(...noticeApi(`NOTICES_${channel}`), `notices.${channel}`);
    subscribe.push(`notices.${channel}.applied`);
  }
  for (const channel of need.follows ?? []) {
    publish.push(
      ...noticeApi(`NOTICES_${channel}`),
      `notices.${channel}.lease`,
      `notices.${channel}.applied`,
    );
  }
  // Each channel's first stream, recorded in `notice_streams` by whoever makes sure of the stream
  // (before it follows it), read by an announcer that starts.
  if (need.announces?.length || need.follows?.length)
    publish.push(...streamApi("KV_notice_streams"), "$KV.notice_streams.>");
  publish.push(...(need.broadcasts ?? []));
  subscribe.push(...(need.hearsBroadcasts ?? []));
  return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)] };
}

/**
 * The `authorization` block of a nats-server configuration: one user per identity, known by its
 * nkey (`keys`: the public key itself, or a `$VARIABLE` the server reads from its environment),
 * with its permissions. A client without one of these keys is refused.
 */
export function authorizationConfig(keys: Record<NatsIdentity, string>): string {
  const list = (subjects: string[]) =>
    subjects.map((subject) => `          ${JSON.stringify(subject)}`).join(",\n");
  const users = natsIdentities.map((identity) => {
    const { publish, subscribe } = permissionsOf(identity);
    return [
      `    # ${identity}`,
      "    {",
      `      nkey: ${keys[identity]}`,
      "      permissions: {",
      "        publish: { allow: [",
      list(publish),
      "        ] }",
      "        subscribe: { allow: [",
      list(subscribe),
      "        ] }",
      "      }",
      "    }",
    ].join("\n");
  });
  return `authorization {\n  users = [\n${users.join("\n")}\n  ]\n}\n`;
}

/** {@link authorizationConfig} with each key read from its {@link publicKeyVariable}. */
export function authorizationConfigFromEnvironment(): string {
  return authorizationConfig(
    Object.fromEntries(natsIdentities.map((id) => [id, `$${publicKeyVariable(id)}`])) as Record<
      NatsIdentity,
      string
    >,
  );
}
