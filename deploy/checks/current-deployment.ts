import { readFileSync } from "node:fs";
import { posix } from "node:path";
import { parse } from "yaml";
import { READINESS_DEADLINE_MS } from "../../packages/service-kit/src/health.ts";
import { KURRENTDB_IMAGE } from "../../packages/testing/src/kurrentdb.ts";
import { effectiveEnv } from "./manifests.ts";

// biome-ignore lint/suspicious/noExplicitAny: compose files and rendered manifests are walked as plain data
type Manifest = any;

/**
 * What is deployed is current (docs/operations.md, "A real cluster" and "Kubernetes"): KurrentDB,
 * pinned, the image the contract suites run, its data on its volume, no projections; and in
 * prod, one CA bundle, Prometheus let in, probes that wait for /readyz (NATS identities:
 * nats-auth.ts).
 */

/** KurrentDB 25.x or 26.x from Kurrent's registry, a pinned version (never `latest`). */
const CURRENT_KURRENTDB = /^docker\.kurrent\.io\/kurrent-latest\/kurrentdb:2[56]\.\d+(\.\d+)?$/;
const KURRENTDB_DATA = "/var/lib/kurrentdb";

/** The problems of one KurrentDB: its image, its variables, its projections. */
function kurrentDbProblems(where: string, image: unknown, env: Record<string, unknown>): string[] {
  const problems: string[] = [];
  if (typeof image !== "string" || !CURRENT_KURRENTDB.test(image))
    problems.push(`${where}: image ${image} is not a pinned KurrentDB 25.x or 26.x`);
  else if (image !== KURRENTDB_IMAGE)
    problems.push(`${where}: image ${image} is not the suites' ${KURRENTDB_IMAGE} (packages/testing)`);
  const old = Object.keys(env).filter((name) => name.startsWith("EVENTSTORE_"));
  if (old.length > 0) problems.push(`${where}: ${old.join(", ")}: KurrentDB reads KURRENTDB_* variables`);
  if (env.KURRENTDB_RUN_PROJECTIONS !== "None")
    problems.push(
      `${where}: KURRENTDB_RUN_PROJECTIONS is ${env.KURRENTDB_RUN_PROJECTIONS ?? "unset"}, not None: nothing reads a projection`,
    );
  if (String(env.KURRENTDB_START_STANDARD_PROJECTIONS ?? "false") !== "false")
    problems.push(`${where}: starts the standard projections, which nothing uses`);
  return problems;
}

/** EVENTSTORE_URL in KurrentDB's own form. */
function connectionProblems(where: string, env: Record<string, unknown>): string[] {
  const url = env.EVENTSTORE_URL;
  if (url === undefined) return [];
  return /^kurrentdb(\+discover)?:\/\//.test(String(url))
    ? []
    : [`${where}: EVENTSTORE_URL is not a kurrentdb:// connection string`];
}

const isOldImage = (image: unknown) => String(image ?? "").startsWith("eventstore/");

export function composeCurrentProblems(composeFile: string): string[] {
  const compose = parse(readFileSync(composeFile, "utf8"), { merge: true });
  const problems: string[] = [];
  for (const [name, definition] of Object.entries<Manifest>(compose.services ?? {})) {
    const where = `docker-compose: ${name}`;
    if (isOldImage(definition.image))
      problems.push(`${where}: runs ${definition.image}; KurrentDB replaced it`);
    if (String(definition.image ?? "").includes("kurrentdb")) {
      problems.push(...kurrentDbProblems(where, definition.image, definition.environment ?? {}));
      const mounts = (definition.volumes ?? []).map((v: unknown) => String(v).split(":")[1]);
      if (!mounts.includes(KURRENTDB_DATA)) problems.push(`${where}: no volume at ${KURRENTDB_DATA}`);
    }
    if (typeof definition.environment?.SERVICE === "string")
      problems.push(...connectionProblems(where, definition.environment));
  }
  if (
    !Object.values<Manifest>(compose.services ?? {}).some((d) => String(d.image ?? "").includes("kurrentdb"))
  )
    problems.push("docker-compose: no KurrentDB");
  return problems;
}

/** The file `path` is in a volume of `kinds` mounted into the container (a Secret or ConfigMap). */
function mountedFrom(container: Manifest, podSpec: Manifest, path: string, kinds: string[]): boolean {
  return (container.volumeMounts ?? []).some((mount: Manifest) => {
    const volume = (podSpec.volumes ?? []).find((v: Manifest) => v.name === mount.name);
    const inside = !posix.relative(mount.mountPath, path).startsWith("..");
    return inside && kinds.some((kind) => volume?.[kind] !== undefined);
  });
}

export function kubernetesCurrentProblems(overlay: "dev" | "prod", objects: Manifest[]): string[] {
  const problems: string[] = [];
  const workloads = objects.filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet");
  for (const workload of workloads) {
    const podSpec = workload.spec?.template?.spec ?? {};
    for (const container of podSpec.containers ?? []) {
      const where = `${overlay}: ${workload.kind}/${workload.metadata?.name}`;
      if (isOldImage(container.image))
        problems.push(`${where}: runs ${container.image}; KurrentDB replaced it`);
      if (String(container.image).includes("kurrentdb")) {
        const env = Object.fromEntries((container.env ?? []).map((v: Manifest) => [v.name, v.value]));
        problems.push(...kurrentDbProblems(where, container.image, env));
        if (!(container.volumeMounts ?? []).some((m: Manifest) => m.mountPath === KURRENTDB_DATA))
          problems.push(`${where}: no volume at ${KURRENTDB_DATA}`);
      }
      // A probe of /readyz that gives up before /readyz answers fails a pod whose checks are slow.
      for (const probe of ["readinessProbe", "livenessProbe", "startupProbe"]) {
        const spec = container[probe];
        if (spec?.httpGet?.path !== "/readyz") continue;
        const timeoutMs = (spec.timeoutSeconds ?? 1) * 1000;
        if (timeoutMs <= READINESS_DEADLINE_MS)
          problems.push(
            `${where}: ${probe} of /readyz times out after ${timeoutMs / 1000} s; /readyz may take ${READINESS_DEADLINE_MS / 1000} s`,
          );
      }
    }
  }
  const deployments = objects.filter((o) => o.kind === "Deployment");
  for (const deployment of deployments) {
    const podSpec = deployment.spec?.template?.spec ?? {};
    const container = podSpec.containers?.[0] ?? {};
    const where = `${overlay}: Deployment/${deployment.metadata?.name}`;
    const env = effectiveEnv(container, objects);
    problems.push(...connectionProblems(where, env));
    if (!monitoringMayScrape(deployment, container, objects))
      problems.push(
        `${where}: no NetworkPolicy lets Prometheus in namespace monitoring reach its health port`,
      );
    if (overlay !== "prod") continue;
    const ca = env.NODE_EXTRA_CA_CERTS;
    if (!ca)
      problems.push(
        `${where}: NODE_EXTRA_CA_CERTS is unset: no CA bundle for KurrentDB, MongoDB, NATS and S3`,
      );
    else if (!mountedFrom(container, podSpec, ca, ["secret", "configMap"]))
      problems.push(`${where}: NODE_EXTRA_CA_CERTS ${ca} is not in a mounted Secret or ConfigMap`);
    for (const key of ["EVENTSTORE_URL", "MONGO_URL"]) {
      if (/tlsCAFile=/.test(env[key] ?? ""))
        problems.push(`${where}: ${key} names a tlsCAFile; the one bundle is NODE_EXTRA_CA_CERTS`);
    }
  }
  return problems;
}

/** A NetworkPolicy selecting the pods lets the namespace `monitoring` in on their health port. */
function monitoringMayScrape(deployment: Manifest, container: Manifest, objects: Manifest[]): boolean {
  const labels = deployment.spec?.template?.metadata?.labels ?? {};
  const healthPort = (container.ports ?? []).find((p: Manifest) => p.name === "health");
  if (!healthPort) return true; // nothing to scrape
  return objects.some((policy) => {
    if (policy.kind !== "NetworkPolicy") return false;
    const selects = Object.entries(policy.spec?.podSelector?.matchLabels ?? {}).every(
      ([key, value]) => labels[key] === value,
    );
    return (
      selects &&
      (policy.spec?.ingress ?? []).some(
        (rule: Manifest) =>
          (rule.from ?? []).some(
            (peer: Manifest) =>
              peer.namespaceSelector?.matchLabels?.["kubernetes.io/metadata.name"] === "monitoring",
          ) &&
          (rule.ports ?? []).some(
            (port: Manifest) => port.port === healthPort.containerPort || port.port === healthPort.name,
          ),
      )
    );
  });
}
