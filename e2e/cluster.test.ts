import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { askAgain } from "@cheese/ask-again";
import { type ClusterInfo, jetStreamState, monitorUrl } from "@cheese/cluster/cluster";
import { inNamespace } from "@cheese/launcher/hosts";
import { launcherNodeOptions } from "@cheese/launcher/node-options";
import { tempDir } from "@cheese/testing";
import { connect, nkeyAuthenticator } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testListenPort } from "./support/ports.ts";

/**
 * `pnpm cluster`: three NATS nodes and two processes of every service, each on a host of its own
 * (network namespaces), as the built command runs it. Root and `ip netns` are needed; elsewhere
 * the suite says why it skips. It is the launcher's, not the image's, and it makes its own two
 * replicas: not under E2E_STACK=containers nor E2E_REPLICAS.
 */
const cli = join(dirname(fileURLToPath(import.meta.url)), "..", "apps", "cluster", "dist", "cli.js");

function unavailable(): string | undefined {
  const reason =
    process.env.E2E_STACK === "containers" || process.env.E2E_REPLICAS
      ? "the cluster harness makes its own hosts and replicas: skipped under E2E_STACK or E2E_REPLICAS"
      : process.getuid?.() !== 0
        ? "the cluster harness needs root (ip netns): skipped"
        : spawnSync("ip", ["netns", "list"]).status !== 0
          ? "the cluster harness needs `ip netns` (iproute2): skipped"
          : undefined;
  if (reason) console.warn(reason);
  return reason;
}

/** Runs the built `pnpm cluster` command; resolves with its exit code and output. */
function cluster(
  args: string[],
  env: Record<string, string>,
  prefix: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const [file, ...argv] = [...prefix, process.execPath, cli, ...args] as [string, ...string[]];
  const child = spawn(file, argv, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

const reason = unavailable();

describe.skipIf(reason)("pnpm cluster", () => {
  const data = tempDir("cluster");
  const operatorKey = `cluster-${randomBytes(12).toString("hex")}`;
  const client = { id: "cluster-test", secret: randomBytes(16).toString("hex") };
  let env: Record<string, string>;
  let running: ClusterInfo;

  beforeAll(async () => {
    env = {
      DATA_DIR: data.path,
      GATEWAY_PORT: String(await testListenPort()),
      API_KEYS: `${operatorKey}:enterprise`,
      OAUTH_CLIENTS: JSON.stringify([
        { ...client, scopes: ["read:cheeses", "write:cheeses"], redirectUris: [], plan: "enterprise" },
      ]),
      LOG_LEVEL: "warn",
    };
    const started = await cluster(["up", "--json"], env);
    expect(started.code, started.stderr).toBe(0);
    running = JSON.parse(started.stdout) as ClusterInfo;
  }, 180_000);

  afterAll(async () => {
    const stopped = await cluster(["down"], env);
    data.remove();
    expect(stopped.code, stopped.stderr).toBe(0);
    const left = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout;
    expect(left, "namespaces left after down").not.toMatch(/cheese-/);
  }, 60_000);

  it("up --json says where every node and process runs, once /readyz is 200", async () => {
    expect(running.url).toBe(`http://127.0.0.1:${env.GATEWAY_PORT}`);
    expect(running.dataDir).toBe(data.path);
    // The launcher runs as `pnpm start` runs it, with its own V8 options.
    const { launcher } = JSON.parse(readFileSync(join(data.path, "run", "processes.json"), "utf8"));
    const launcherArgs = readFileSync(`/proc/${launcher}/cmdline`, "utf8").split("\0");
    expect(launcherArgs).toEqual(expect.arrayContaining(launcherNodeOptions.split(" ")));
    // NATS lets in only the identities the launcher made; the operators' may read JetStream's
    // state, and nothing that a service does.
    expect(running.natsCredentials).toBe(join(data.path, "nats-identities", "monitor.nk"));
    expect(statSync(running.natsCredentials).mode & 0o777).toBe(0o600);
    const servers = running.nats.map(({ url }) => url);
    const anonymous = await connect({ servers, reconnect: false }).then(
      (nc) => nc.close().then(() => "connected"),
      (error: { code?: string }) => error.code,
    );
    expect(anonymous).toBe("AUTHORIZATION_VIOLATION");
    const seed = readFileSync(running.natsCredentials).subarray(0, 58);
    const operator = await connect({ servers, authenticator: nkeyAuthenticator(seed) });
    try {
      const jsm = await operator.jetstreamManager();
      expect((await jsm.streams.info("EVENTS")).config.num_replicas).toBe(3);
      await expect(operator.request("customer.customer.get", "{}", { timeout: 2_000 })).rejects.toThrow();
    } finally {
      await operator.close();
    }
    expect(running.nats.map(({ name }) => name)).toEqual(["nats-1", "nats-2", "nats-3"]);
    for (const node of running.nats) {
      expect(node).toMatchObject({
        netns: `cheese-${node.name}`,
        url: expect.stringMatching(/^nats:\/\/10\.213\.0\.\d+:4222$/),
      });
      expect(node.pid).toBeGreaterThan(0);
    }
    const services = running.services.map(({ name, replica }) => `${name}#${replica}`).sort();
    expect(services).toEqual(
      ["catalogue", "customer", "gateway", "notification", "ordering"].flatMap((name) => [
        `${name}#1`,
        `${name}#2`,
      ]),
    );
    // Each on a host of its own.
    expect(new Set(running.services.map(({ netns }) => netns)).size).toBe(10);
    expect((await fetch(`${running.url}/readyz`)).status).toBe(200);
    // No process failed its start: each waits for the streams and buckets it opens to have a
    // leader (without that, a first key-value read on a bucket just made timed out, and exited).
    // A failed start's record says what the process printed on standard error (its error).
    const log = readFileSync(join(data.path, "run", "cluster.log"), "utf8");
    expect(log.split("\n").filter((line) => line.includes('"msg":"process exited"'))).toEqual([]);
    // The JetStream stream of integration events is kept on all three nodes.
    const monitor = monitorUrl(running.nats[0]!.url);
    const jsz = (await (await fetch(`${monitor}/jsz?accounts=true&streams=true&config=true`)).json()) as {
      meta_cluster: { cluster_size: number };
      account_details?: { stream_detail?: { name: string; config: { num_replicas: number } }[] }[];
    };
    expect(jsz.meta_cluster.cluster_size).toBe(3);
    const streams = (jsz.account_details ?? []).flatMap((account) => account.stream_detail ?? []);
    const replicas = Object.fromEntries(streams.map(({ name, config }) => [name, config.num_replicas]));
    expect(replicas.EVENTS).toBe(3);
    expect(replicas.NOTICES_catalogue_cheese_changed).toBe(3);
    expect(
      Object.values(replicas).every((n) => n === 3),
      JSON.stringify(replicas),
    ).toBe(true);
    // What a start that never gets ready prints: each node's view of the meta leader and of each
    // stream's leader and the other nodes keeping it (/healthz may still say a consumer is catching up).
    const state = await jetStreamState(data.path);
    for (const { name } of running.nats)
      expect(state).toMatch(
        new RegExp(
          `^  ${name}: /healthz \\d{3} .*; meta leader nats-\\d of 3; routes to nats-\\d, nats-\\d$`,
          "m",
        ),
      );
    expect(state.match(/^ {4}EVENTS: leader nats-\d; peers nats-\d.*, nats-\d.*$/gm)).toHaveLength(3);
    // Each durable's place, once: under its stream, on the node leading it.
    expect(
      state.match(
        /^ {4}EVENTS: .*\n(?: {6}durable .*\n)*? {6}durable ordering-cheese-deleted: delivered \d+, ack floor \d+, awaiting ack \d+, redelivered \d+, left \d+$/gm,
      ),
    ).toHaveLength(1);
  });

  it("refuses an up on the DATA_DIR it runs on, naming DATA_DIR and its launcher (exit 78)", async () => {
    const again = await cluster(["up", "--json"], env);
    expect(again.code).toBe(78);
    const { launcher } = JSON.parse(readFileSync(join(data.path, "run", "processes.json"), "utf8"));
    expect(again.stderr).toContain(`DATA_DIR ${data.path} is in use by process ${launcher} (pnpm cluster up`);
  });

  it("refuses a second cluster while one runs (exit 78)", async () => {
    const second = await cluster(["up", "--json"], { ...env, DATA_DIR: join(data.path, "second") });
    expect(second.code).toBe(78);
    expect(second.stderr).toContain(`a cluster already runs on DATA_DIR ${data.path}`);
  });

  it("reads a write made through one gateway at once through the other, 400 rounds, while a tenth of the routes' packets are lost", async () => {
    const gateways = running.services
      .filter(({ name }) => name === "gateway")
      .map(({ address }) => `http://${address}:8080/v2`);
    expect(gateways).toHaveLength(2);
    const token = await fetch(`${running.url}/oauth/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString("base64")}`,
      },
      body: "grant_type=client_credentials",
    });
    expect(token.status).toBe(200);
    const bearer = {
      authorization: `Bearer ${((await token.json()) as { access_token: string }).access_token}`,
    };
    const apiKey = { "x-api-key": operatorKey };
    // The write the rounds read: asked again after a 503 (a retryable answer, as a client would:
    // just after the start a credential check can find its bucket not answering yet), with one
    // Idempotency-Key, so it is made once.
    const name = `Routed ${Date.now()}`;
    const create = () =>
      fetch(`${gateways[0]}/cheeses`, {
        method: "POST",
        headers: { ...bearer, "content-type": "application/json", "idempotency-key": name.replace(" ", "-") },
        body: JSON.stringify({ name, pricePerKg: 10 }),
      });
    const created = await askAgain(
      async () => {
        const answer = await create();
        if (answer.status === 503) throw new Unavailable(`503 ${await answer.text()}`);
        return answer;
      },
      { pauseMs: 500, tries: 20, retryOn: (error) => error instanceof Unavailable },
    );
    const body = await created.text();
    expect(created.status, body).toBe(201);
    const { id } = JSON.parse(body) as { id: number };
    // Lost packets on the routes between the NATS nodes (port 6222 either way): a change notice
    // crossing a route is then retransmitted a few hundred ms late, while the write's reply may
    // take another route, or none, and reach its gateway at once.
    const lose = (verb: "-I" | "-D") => {
      for (const node of running.nats) {
        for (const port of ["--dport", "--sport"]) {
          inNamespace(node.netns, [
            "iptables",
            verb,
            "OUTPUT",
            "-o",
            "eth0",
            "-p",
            "tcp",
            port,
            "6222",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.1",
            "-j",
            "DROP",
          ]);
        }
      }
    };
    const readAt = async (base: string) => {
      const response = await fetch(`${base}/cheeses/${id}`, { headers: apiKey });
      return { status: response.status, body: await response.text() };
    };
    lose("-I");
    const stale: string[] = [];
    try {
      for (let round = 0; round < 400; round++) {
        const [writer, reader] =
          round % 2 === 0 ? [gateways[0]!, gateways[1]!] : [gateways[1]!, gateways[0]!];
        // The reader has the cheese as it is now, twice: the second is what a cache answers.
        await readAt(reader);
        expect((await readAt(reader)).status).toBe(200);
        const name = `Routed ${round} ${Date.now()}`;
        const written = await fetch(`${writer}/cheeses/${id}?name=${encodeURIComponent(name)}`, {
          method: "POST",
          headers: bearer,
        });
        const updated = await written.text();
        expect(written.status, `update ${round}: ${updated}`).toBe(200);
        const after = await readAt(reader);
        if (after.body !== updated) stale.push(`round ${round}: read ${after.body.slice(0, 120)}`);
      }
    } finally {
      lose("-D");
    }
    expect(stale, "reads through the other gateway that missed the write just acknowledged").toEqual([]);
  }, 600_000);
});

describe.skipIf(reason)("pnpm cluster without root", () => {
  it("says it needs root and exits 78, making nothing", async () => {
    const refused = await cluster(["up"], { DATA_DIR: "/tmp/cheese-cluster-unprivileged" }, [
      "setpriv",
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
    ]);
    expect(refused.code).toBe(78);
    expect(refused.stderr).toContain("needs root");
  });
});

/** The gateway answered 503 (retryable): asked again. */
class Unavailable extends Error {}
