import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { effectiveEnv } from "./manifests.ts";

// biome-ignore lint/suspicious/noExplicitAny: compose files and rendered manifests are walked as plain data
type Manifest = any;

/**
 * NATS runs as a JetStream cluster of three wherever the system is deployed, and every service
 * keeps three copies of its streams there (docs/operations.md, "A real cluster"): one node lost
 * then loses and stops nothing. A single NATS, or services left at NATS_REPLICAS=1 on a cluster,
 * would pass every other check and lose integration events with one node's disk.
 */
const NODES = 3;

/**
 * The nats-server release line the suites run (`scripts/install-nats-server.sh` puts it on PATH)
 * and so the one every deployment's NATS image must be of: `nats:<line>-alpine`.
 */
const NATS_LINE = readFileSync(new URL("../nats/line", import.meta.url), "utf8").trim();

/** A NATS image not of the line the suites run. */
function imageProblems(where: string, image: unknown): string[] {
  const expected = `nats:${NATS_LINE}-alpine`;
  return image === expected
    ? []
    : [`${where}: runs ${image}, not ${expected} (the line the suites run, deploy/nats/line)`];
}

/** The value following `flag` in a server's arguments (`--routes a,b` → "a,b"). */
function flagValue(args: string[], ...flags: string[]): string | undefined {
  const at = args.findIndex((arg) => flags.includes(arg));
  return at === -1 ? undefined : args[at + 1];
}

/** Host names of a comma-separated list of URLs (`nats://a:4222,nats://b:4222` → a, b). */
function hostsOf(urls: unknown): string[] {
  if (typeof urls !== "string") return [];
  return urls.split(",").flatMap((url) => {
    try {
      return [new URL(url.trim()).hostname];
    } catch {
      return [];
    }
  });
}

/** What a nats-server's arguments lack to be a JetStream node routed to every one of `peers`. */
function serverProblems(where: string, args: string[], peers: string[]): string[] {
  const problems: string[] = [];
  if (!args.includes("-js") && !args.includes("--jetstream"))
    problems.push(`${where}: JetStream is not on (-js)`);
  if (!flagValue(args, "--cluster", "--cluster_listen"))
    problems.push(`${where}: no cluster port (--cluster), so no node can route to it`);
  if (!flagValue(args, "--cluster_name")) problems.push(`${where}: no --cluster_name`);
  const routed = hostsOf(flagValue(args, "--routes"));
  const missing = peers.filter((peer) => !routed.includes(peer));
  if (missing.length > 0) problems.push(`${where}: --routes does not name ${missing.join(", ")}`);
  return problems;
}

/** What an application's environment lacks to use every node and keep three copies. */
function serviceProblems(where: string, env: Record<string, unknown>, nodes: string[] | undefined): string[] {
  const problems: string[] = [];
  if (String(env.NATS_REPLICAS) !== String(NODES))
    problems.push(`${where}: NATS_REPLICAS is ${env.NATS_REPLICAS ?? "unset (1)"}, not ${NODES}`);
  const named = hostsOf(env.NATS_URL);
  if (nodes) {
    const missing = nodes.filter((node) => !named.includes(node));
    if (missing.length > 0) problems.push(`${where}: NATS_URL does not name ${missing.join(", ")}`);
  } else if (named.length < NODES) {
    problems.push(`${where}: NATS_URL names ${named.length} NATS server(s), not the cluster's ${NODES}`);
  }
  return problems;
}

export function composeNatsProblems(composeFile: string): string[] {
  const compose = parse(readFileSync(composeFile, "utf8"), { merge: true });
  const services = Object.entries<Manifest>(compose.services ?? {});
  const nats = services.filter(([, definition]) => String(definition.image ?? "").startsWith("nats:"));
  const names = nats.map(([name]) => name);
  const problems: string[] = [];
  if (nats.length < NODES)
    problems.push(`docker-compose: ${nats.length} NATS service(s), not a cluster of ${NODES}`);
  const volumes = new Map<string, string>();
  for (const [name, definition] of nats) {
    const args: string[] = (definition.command ?? []).map(String);
    problems.push(...imageProblems(`docker-compose: ${name}`, definition.image));
    problems.push(...serverProblems(`docker-compose: ${name}`, args, names));
    const store = flagValue(args, "-sd", "--store_dir");
    const volume = (definition.volumes ?? [])
      .map(String)
      .find((mount: string) => mount.split(":")[1] === store)
      ?.split(":")[0];
    if (!volume) problems.push(`docker-compose: ${name}: its JetStream store ${store} is not on a volume`);
    else if (volumes.has(volume))
      problems.push(`docker-compose: ${name} and ${volumes.get(volume)} share the volume ${volume}`);
    else volumes.set(volume, name);
  }
  for (const [name, definition] of services) {
    if (typeof definition.environment?.SERVICE !== "string") continue;
    problems.push(...serviceProblems(`docker-compose: ${name}`, definition.environment, names));
  }
  return problems;
}

export function kubernetesNatsProblems(overlay: "dev" | "prod", objects: Manifest[]): string[] {
  const problems: string[] = [];
  let nodes: string[] | undefined;
  if (overlay === "dev") {
    const set = objects.find(
      (o) =>
        o.kind === "StatefulSet" &&
        (o.spec?.template?.spec?.containers ?? []).some((c: Manifest) => String(c.image).startsWith("nats:")),
    );
    if (!set) return ["dev: no NATS StatefulSet"];
    const name = set.metadata?.name;
    const replicas = set.spec?.replicas ?? 1;
    const where = `dev: StatefulSet/${name}`;
    if (replicas < NODES) problems.push(`${where}: ${replicas} replica(s), not a cluster of ${NODES}`);
    nodes = Array.from({ length: replicas }, (_, i) => `${name}-${i}.${set.spec?.serviceName}`);
    const container = set.spec.template.spec.containers.find((c: Manifest) =>
      String(c.image).startsWith("nats:"),
    );
    problems.push(...imageProblems(where, container.image));
    problems.push(...serverProblems(where, (container.args ?? container.command ?? []).map(String), nodes));
    if ((set.spec?.volumeClaimTemplates ?? []).length === 0)
      problems.push(`${where}: no volumeClaimTemplates, so its nodes have no store of their own`);
    // Ready needs a JetStream meta leader, i.e. two nodes up: started one by one, none gets ready.
    if (set.spec?.podManagementPolicy !== "Parallel")
      problems.push(
        `${where}: podManagementPolicy is not Parallel; the first node waits for a quorum never started`,
      );
    const service = objects.find((o) => o.kind === "Service" && o.metadata?.name === set.spec?.serviceName);
    if (service?.spec?.publishNotReadyAddresses !== true)
      problems.push(
        `dev: Service/${set.spec?.serviceName} does not publish not-ready addresses; routes never resolve`,
      );
  }
  for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
    for (const container of deployment.spec?.template?.spec?.containers ?? []) {
      const where = `${overlay}: Deployment/${deployment.metadata?.name}`;
      problems.push(...serviceProblems(where, effectiveEnv(container, objects), nodes));
    }
  }
  return problems;
}
