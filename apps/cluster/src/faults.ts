import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertHostsPossible, bridgeAddress, inNamespace } from "@cheese/launcher/hosts";
import { envelopeOf, Receiver } from "@cheese/testing/receiver";
import {
  type ClusterInfo,
  closedSince,
  dependents,
  down,
  info,
  jetStreamState,
  monitorUrl,
  up,
} from "./cluster.ts";
import { Load } from "./load.ts";
import { type SlowLinkMechanism, slowLink, slowLinkMechanism } from "./slow-link.ts";

/**
 * `pnpm cluster faults [--short]`: a cluster of its own (cluster.ts) under the writers' load
 * (load.ts) and a webhook receiver on this host, while it
 *   (a) SIGKILLs a NATS node (the launcher restarts it on its store),
 *   (b) cuts a NATS node off from the others and from the services for 20 s (a packet filter in
 *       its namespace), then heals it,
 *   (c) adds 200 ms of delay and 5 % loss to one service replica's link for 20 s (`tc netem`, or
 *       on a kernel without it the NFQUEUE delayer: slow-link.ts),
 *   (d) SIGKILLs one replica of each service in turn (the launcher restarts it);
 * then checks, a line each, and exits non-zero when one fails. `--short`: one fault of each kind
 * (about a minute of faults); otherwise rounds of all four, other nodes and replicas each round,
 * for at most five minutes.
 */

/** A cut or a slow link lasts this long. */
const FAULT_MS = 20_000;
/** After each heal, `/readyz` must be 200 again within this. */
const RECOVERY_LIMIT_MS = 10_000;
/** The long run's faults stop starting after this. */
const LONG_RUN_MS = 4 * 60_000;
/** After the load stops: how long acknowledged writes and webhooks may take to show. */
const SETTLE_MS = 60_000;

interface Recovery {
  fault: string;
  ms: number;
}

export async function runFaults({
  short,
  env,
}: {
  short: boolean;
  env: Record<string, string | undefined>;
}): Promise<boolean> {
  const dataDir = env.DATA_DIR || mkdtempSync(join(tmpdir(), "cheese-faults-"));
  const credentials = {
    operatorKey: `faults-${randomBytes(12).toString("hex")}`,
    client: { id: "faults-client", secret: randomBytes(16).toString("hex") },
  };
  // Timed to the millisecond (UTC), to be set beside the launcher's log (run/cluster.log).
  const say = (line: string) => console.log(`faults: ${new Date().toISOString().slice(11, 23)} ${line}`);
  // What a slow link needs is checked before anything starts (root first: the check needs it).
  assertHostsPossible();
  const mechanism = slowLinkMechanism();
  say(
    mechanism.kind === "netem"
      ? "slow links by tc netem"
      : `no netem in this kernel: slow links by the NFQUEUE delayer (${mechanism.delayer})`,
  );
  const cluster = await up({
    // Retries close together, so a delivery that failed during a fault is retried within the run.
    WEBHOOK_RETRY_DELAYS: "0,1s,2s,5s,10s,20s",
    LOG_LEVEL: "warn",
    ...env,
    DATA_DIR: dataDir,
    GATEWAY_PORT: env.GATEWAY_PORT ?? "18080",
    // The run's own credentials, on plans that never throttle its writers.
    API_KEYS: `${credentials.operatorKey}:enterprise`,
    OAUTH_CLIENTS: JSON.stringify([
      {
        ...credentials.client,
        scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
        redirectUris: [],
        plan: "enterprise",
      },
    ]),
    ANON_PLAN: "enterprise",
    // The receiver is on the bridge's address, a private one.
    WEBHOOK_ALLOW_PRIVATE_URLS: "true",
  });
  say(`cluster ready on ${cluster.url} (data in ${dataDir})`);
  // On the bridge's address, where the notification hosts reach it.
  const receiver = await Receiver.start(bridgeAddress);
  const load = new Load(cluster.url, credentials);
  let passed = false;
  try {
    const registered = await load.call("POST", "/v2/webhooks", load.operatorKey, {
      url: receiver.url("/hooks"),
      events: ["order.placed"],
    });
    if (registered?.status !== 201) throw new Error(`webhook not registered: ${JSON.stringify(registered)}`);
    const webhookId = (registered.json as { id: number }).id;
    await load.start();
    const recoveries = await injectFaults(dataDir, cluster, load, mechanism, short, say);
    await load.stop();
    say(`load stopped: ${summary(load)}`);
    passed = await check(load, receiver, webhookId, recoveries, say);
    // While the cluster still runs: a check that failed for want of a stream's leader, a replica
    // left behind or a missing route shows here (the run's logs are at warn level).
    if (!passed) say(`what each NATS node says now:\n${await jetStreamState(dataDir)}`);
  } finally {
    await load.stop();
    await receiver.close();
    await down(dataDir);
  }
  if (passed && !env.DATA_DIR) rmSync(dataDir, { recursive: true, force: true });
  if (!passed) say(`data kept in ${dataDir} (the launcher's output: run/cluster.log)`);
  return passed;
}

function summary(load: Load): string {
  const statuses = [...load.answers.byStatus].sort(([a], [b]) => a - b);
  return `${statuses.map(([status, n]) => `${n}×${status}`).join(", ")}; ${load.answers.unanswered} unanswered`;
}

/**
 * Runs the faults, one at a time; after each heal, how long `/readyz` took to be 200 again, and
 * the load's 503s and unanswered requests from the fault's start until the cluster was whole again.
 */
async function injectFaults(
  dataDir: string,
  cluster: ClusterInfo,
  load: Load,
  mechanism: SlowLinkMechanism,
  short: boolean,
  say: (line: string) => void,
): Promise<Recovery[]> {
  const recoveries: Recovery[] = [];
  const started = Date.now();
  const refusals = () => ({
    refused: load.answers.byStatus.get(503) ?? 0,
    refusedFor: new Map(load.answers.refusedFor),
    unanswered: load.answers.unanswered,
    at: Date.now(),
  });
  /** Counted from the fault's start, which is when the fault before it left the cluster whole. */
  let before = refusals();
  const healed = async (fault: string) => {
    const { ms, down } = await untilReady(cluster.url);
    recoveries.push({ fault, ms });
    // The next fault starts on a whole cluster: every process and node back.
    await untilWhole(dataDir);
    const now = refusals();
    const closed = await closedSince(dataDir, before.at);
    say(
      `${fault}: healed, /readyz 200 after ${(ms / 1000).toFixed(1)} s${downMeanwhile(down)}; ` +
        `${now.refused - before.refused} 503s${mostRefused(before.refusedFor, now.refusedFor)}, ` +
        `${now.unanswered - before.unanswered} unanswered; ` +
        `NATS connections closed: ${closed.length === 0 ? "none" : closed.join(", ")}`,
    );
    before = now;
  };
  const services = ["catalogue", "ordering", "customer", "notification", "gateway"];
  for (let round = 0; short ? round < 1 : Date.now() - started < LONG_RUN_MS; round++) {
    const node = cluster.nats[round % cluster.nats.length]!;
    const now = info(dataDir);

    const killed = now.nats.find(({ name }) => name === node.name);
    say(`(a) SIGKILL ${node.name} (pid ${killed?.pid}; ${await dependents(dataDir, node.name)})`);
    if (killed?.pid) process.kill(killed.pid, "SIGKILL");
    await healed(`(a) ${node.name} killed`);

    const cut = cluster.nats[(round + 1) % cluster.nats.length]!;
    say(`(b) cutting ${cut.name} off for ${FAULT_MS / 1000} s (${await dependents(dataDir, cut.name)})`);
    const filter = (verb: "-I" | "-D") => {
      inNamespace(cut.netns, ["iptables", verb, "INPUT", "-i", "eth0", "-j", "DROP"]);
      inNamespace(cut.netns, ["iptables", verb, "OUTPUT", "-o", "eth0", "-j", "DROP"]);
    };
    filter("-I");
    await pause(FAULT_MS);
    filter("-D");
    await healed(`(b) ${cut.name} cut off`);

    const slow = now.services[(round * 3) % now.services.length]!;
    const link = await slowLink(slow.netns, "eth0", mechanism);
    say(`(c) ${link.what}, on ${slow.name}#${slow.replica}'s link for ${FAULT_MS / 1000} s`);
    await pause(FAULT_MS);
    say(`(c) ${slow.name}#${slow.replica}'s link back (${await link.heal()})`);
    await healed(`(c) ${slow.name}#${slow.replica} slowed`);

    for (const name of services) {
      const replica = (round % 2) + 1;
      const target = info(dataDir).services.find((s) => s.name === name && s.replica === replica);
      say(`(d) SIGKILL ${name}#${replica} (pid ${target?.pid})`);
      if (target?.pid) process.kill(target.pid, "SIGKILL");
      await healed(`(d) ${name}#${replica} killed`);
    }
  }
  return recoveries;
}

/** " (12× POST /v2/cheeses: catalogue is unavailable; try again, 3× ...)": the three most frequent 503s between two counts. */
function mostRefused(before: Map<string, number>, now: Map<string, number>): string {
  const since = [...now]
    .map(([why, n]) => [why, n - (before.get(why) ?? 0)] as const)
    .filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a);
  if (since.length === 0) return "";
  const shown = since.slice(0, 3).map(([why, n]) => `${n}× ${why}`);
  return ` (${shown.join(", ")}${since.length > 3 ? ", …" : ""})`;
}

/** Waits (as the load goes on) for the length of a fault. Not before an assertion: the fault's duration. */
function pause(ms: number): Promise<void> {
  return new Promise((next) => setTimeout(next, ms));
}

/**
 * Milliseconds until `/readyz` answers 200 (polled every 100 ms; gives up after a minute), and
 * for each check its 503s named down, from its first such answer to its last.
 */
async function untilReady(url: string): Promise<{ ms: number; down: Map<string, DownSpan> }> {
  const started = Date.now();
  const down = new Map<string, DownSpan>();
  while (Date.now() - started < 60_000) {
    try {
      const answer = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
      if (answer.status === 200) return { ms: Date.now() - started, down };
      const { checks } = (await answer.json().catch(() => ({}))) as { checks?: Record<string, string> };
      const at = Date.now() - started;
      for (const [name, state] of Object.entries(checks ?? {})) {
        if (state !== "down") continue;
        const span = down.get(name);
        if (span) span.last = at;
        else down.set(name, { first: at, last: at });
      }
    } catch {
      // not answering yet
    }
    await pause(100);
  }
  return { ms: Date.now() - started, down };
}

/** When a check was first and last named down after a heal, in ms from the heal. */
interface DownSpan {
  first: number;
  last: number;
}

/** " (down meanwhile: revocations 0.1-9.8 s, ...)", or nothing when no check was named down. */
function downMeanwhile(down: Map<string, DownSpan>): string {
  if (down.size === 0) return "";
  const s = (ms: number) => (ms / 1000).toFixed(1);
  const spans = [...down].map(([name, { first, last }]) => `${name} ${s(first)}-${s(last)} s`);
  return ` (down meanwhile: ${spans.join(", ")})`;
}

/** Waits until every NATS node and every service process runs (the launcher restarted the killed one). */
async function untilWhole(dataDir: string): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < 60_000) {
    const now = info(dataDir);
    const nodesUp = await Promise.all(
      now.nats.map(async ({ url, pid }) => {
        if (!pid) return false;
        const monitor = monitorUrl(url);
        try {
          return (await fetch(`${monitor}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok;
        } catch {
          return false;
        }
      }),
    );
    if (nodesUp.every(Boolean) && now.services.every(({ pid }) => pid)) return;
    await pause(200);
  }
}

/** Polls `probe` until it says true or `ms` passes; resolves with its last answer. */
async function within(ms: number, probe: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await pause(500);
  }
}

/** The checks after the run, a line each; true when every one holds. */
async function check(
  load: Load,
  receiver: Receiver,
  webhookId: number,
  recoveries: Recovery[],
  say: (line: string) => void,
): Promise<boolean> {
  const { cheeses, customers, orders } = load.acknowledged;
  const bearer = await load.operatorBearer();
  const results: boolean[] = [];
  const line = (ok: boolean, text: string) => {
    results.push(ok);
    say(`${ok ? "ok  " : "FAIL"} ${text}`);
  };

  // Every acknowledged write reads back as acknowledged (while the cluster settles, a 503 is waited out).
  const lost: string[] = [];
  const readBack = async (
    path: string,
    headers: Record<string, string>,
    matches: (json: unknown) => boolean,
  ) => {
    const ok = await within(SETTLE_MS, async () => {
      const answer = await load.call("GET", path, headers);
      return answer?.status === 200 && matches(answer.json);
    });
    if (!ok) lost.push(path);
  };
  for (const { id, name } of cheeses)
    await readBack(`/v2/cheeses/${id}`, bearer, (json) => (json as { name: string }).name === name);
  for (const { username } of customers)
    await readBack(
      `/v2/customer/${username}`,
      load.operatorKey,
      (json) => (json as { username: string }).username === username,
    );
  for (const { id } of orders)
    await readBack(`/v2/store/order/${id}`, load.operatorKey, (json) => (json as { id: number }).id === id);
  const acknowledged = cheeses.length + customers.length + orders.length;
  line(
    lost.length === 0,
    `every acknowledged write reads back (${cheeses.length} cheeses, ${customers.length} customers, ${orders.length} orders)${lost.length ? `; lost: ${lost.slice(0, 10).join(", ")}` : ""}`,
  );

  // No id was handed out twice.
  const duplicates = (ids: number[]) => ids.length - new Set(ids).size;
  const duplicateIds =
    duplicates(cheeses.map(({ id }) => id)) +
    duplicates(customers.map(({ id }) => id)) +
    duplicates(orders.map(({ id }) => id));
  line(duplicateIds === 0, `no id handed out twice (${duplicateIds} duplicates)`);

  // Every placed order's order.placed reached the receiver; no webhook-id came with two bodies.
  const missing = () => orders.filter(({ id }) => !received(receiver).placedOrders.has(String(id)));
  await within(SETTLE_MS, async () => missing().length === 0);
  const notArrived = missing().map(({ id }) => id);
  const missingWebhooks = notArrived.length;
  const got = received(receiver);
  line(
    missingWebhooks === 0,
    `every placed order's order.placed arrived (${got.placedOrders.size} received, ${missingWebhooks} missing${missingWebhooks ? `: orders ${notArrived.slice(0, 10).join(", ")}` : ""})`,
  );
  line(
    got.conflicting.length === 0,
    `no webhook-id arrived with two different bodies (${got.conflicting.length}; ${got.deliveries} deliveries, ${got.ids} distinct ids)`,
  );

  // No delivery round was attempted twice at once: within a round, attempt numbers are distinct.
  const doubled = await doubleAttempts(load, webhookId);
  line(
    doubled.length === 0,
    `no webhook attempt made twice (${doubled.length}${doubled.length ? `: ${doubled.slice(0, 5).join(", ")}` : ""})`,
  );

  // Every order was decided (approved or cancelled by its processing timer) exactly once.
  const decisions = async (id: number) => {
    const history = await load.call("GET", `/v2/store/order/${id}/history?limit=100`, load.operatorKey);
    const types = ((history?.json as { items?: { type: string }[] })?.items ?? []).map(({ type }) => type);
    return types.filter((type) => type === "order.approved" || type === "order.cancelled").length;
  };
  const undecided: number[] = [];
  const decidedTwice: number[] = [];
  for (const { id } of orders) {
    let count = 0;
    await within(SETTLE_MS, async () => {
      count = await decisions(id);
      return count > 0;
    });
    if (count === 0) undecided.push(id);
    if (count > 1) decidedTwice.push(id);
  }
  line(
    undecided.length + decidedTwice.length === 0,
    `every order decided exactly once (${undecided.length} undecided, ${decidedTwice.length} decided twice${decidedTwice.length ? `: ${decidedTwice.slice(0, 10).join(", ")}` : ""})`,
  );

  const failures = load.answers.failures;
  line(
    failures.length === 0,
    `no 500 (5xx other than 503 with Retry-After): ${failures.length}${failures.length ? `; ${failures.slice(0, 5).join(" | ")}` : ""}`,
  );

  const slowest = recoveries.reduce((max, { ms }) => Math.max(max, ms), 0);
  const late = recoveries.filter(({ ms }) => ms > RECOVERY_LIMIT_MS);
  line(
    late.length === 0,
    `/readyz 200 within ${RECOVERY_LIMIT_MS / 1000} s of each heal (${recoveries.length} heals${late.length ? `; late: ${late.map(({ fault }) => fault).join(", ")}` : ""})`,
  );

  say(
    `acknowledged ${acknowledged}, lost ${lost.length}, duplicate ids ${duplicateIds}, missing webhooks ${missingWebhooks}, 500s ${failures.length}, max recovery ${(slowest / 1000).toFixed(1)} s`,
  );
  return results.every(Boolean);
}

/** Deliveries of the run's registration with two attempts of one number in one round. */
async function doubleAttempts(load: Load, webhookId: number): Promise<string[]> {
  const doubled: string[] = [];
  let cursor: string | undefined;
  do {
    const path = `/v2/webhooks/${webhookId}/deliveries?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
    // Asked again while the system settles (a 503, or no answer in time on a loaded machine).
    let page: Awaited<ReturnType<Load["call"]>>;
    await within(SETTLE_MS, async () => {
      page = await load.call("GET", path, load.operatorKey);
      return page?.status === 200;
    });
    const json = page?.json as
      | {
          items: { id: number; attempts: { attempt: number; round: number }[] }[];
          nextCursor?: string | null;
        }
      | undefined;
    if (page?.status !== 200 || !json) {
      doubled.push(`deliveries not listed within ${SETTLE_MS / 1000} s (${page?.status ?? "no answer"})`);
      return doubled;
    }
    for (const delivery of json.items) {
      const seen = new Set<string>();
      for (const { attempt, round } of delivery.attempts) {
        const key = `${round}/${attempt}`;
        if (seen.has(key)) doubled.push(`delivery ${delivery.id} round ${round} attempt ${attempt}`);
        seen.add(key);
      }
    }
    cursor = json.nextCursor ?? undefined;
  } while (cursor);
  return doubled;
}

/** What the receiver got: each webhook-id's bodies, and the orders whose order.placed arrived. */
function received(receiver: Receiver): {
  deliveries: number;
  ids: number;
  conflicting: string[];
  placedOrders: Set<string>;
} {
  const bodies = new Map<string, string>();
  const conflicting: string[] = [];
  const placedOrders = new Set<string>();
  const requests = receiver.requests("/hooks");
  for (const request of requests) {
    const { headers, body } = request;
    const id = String(headers["webhook-id"] ?? "");
    const earlier = bodies.get(id);
    if (earlier !== undefined && earlier !== body) conflicting.push(id);
    bodies.set(id, body);
    try {
      const envelope = envelopeOf(request);
      if (envelope.type === "order.placed") placedOrders.add(String(envelope.data.order_id));
    } catch {
      conflicting.push(`${id} (not JSON)`);
    }
  }
  return { deliveries: requests.length, ids: bodies.size, conflicting, placedOrders };
}
