import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { KURRENTDB_IMAGE } from "../../packages/testing/src/kurrentdb.ts";

/**
 * What the overlays must hold beyond valid schemas (docs/operations.md, "Kubernetes"): each
 * rule names what goes wrong in a cluster without it.
 */

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked as plain data
type Manifest = any;

const containersOf = (object: Manifest): Manifest[] => object.spec?.template?.spec?.containers ?? [];
const podSpecOf = (object: Manifest): Manifest => object.spec?.template?.spec ?? {};
const label = (object: Manifest) => `${object.kind}/${object.metadata?.name}`;

/** A first deploy catches up a long history before /healthz answers: 15 minutes at least. */
const STARTUP_BUDGET_S = 15 * 60;

export function overlayRuleProblems(
  overlay: "dev" | "prod",
  objects: Manifest[],
  composeFile: string,
): string[] {
  const problems: string[] = [];
  const deployments = objects.filter((object) => object.kind === "Deployment");
  const byName = (kind: string, name: string) =>
    objects.find((object) => object.kind === kind && object.metadata?.name === name);

  for (const deployment of deployments) {
    for (const container of containersOf(deployment)) {
      const startup = container.startupProbe;
      const budget = (startup?.periodSeconds ?? 10) * (startup?.failureThreshold ?? 3);
      if (!startup) problems.push(`${label(deployment)}: no startupProbe, so liveness kills a long catch-up`);
      else if (budget < STARTUP_BUDGET_S)
        problems.push(
          `${label(deployment)}: startupProbe allows ${budget} s, less than ${STARTUP_BUDGET_S} s`,
        );
    }
  }

  // An image that runs unprivileged cannot write a volume it does not own the group of.
  for (const object of objects.filter((o) => o.kind === "Deployment" || o.kind === "StatefulSet")) {
    const security = podSpecOf(object).securityContext ?? {};
    const unprivileged =
      (security.runAsUser !== undefined && security.runAsUser !== 0) ||
      containersOf(object).some((c: Manifest) => c.image === KURRENTDB_IMAGE);
    const hasVolume =
      (object.spec?.volumeClaimTemplates ?? []).length > 0 || (podSpecOf(object).volumes ?? []).length > 0;
    if (unprivileged && hasVolume && security.fsGroup === undefined)
      problems.push(`${label(object)}: runs unprivileged with a volume but sets no fsGroup`);
  }

  if (overlay === "prod") {
    const config = byName("ConfigMap", "cheese-store-config") ?? objects.find((o) => o.kind === "ConfigMap");
    for (const key of ["EVENTSTORE_URL", "MONGO_URL"]) {
      if (config?.data?.[key] !== undefined)
        problems.push(`prod: ${key} is in the ConfigMap; it carries credentials and belongs in the Secret`);
    }
    // The read cache keeps read-your-writes with a NATS cluster (docs/architecture.md, "Read
    // cache"): production runs the read path the tests and benchmarks run, the default.
    if (config?.data?.READ_CACHE !== undefined && config.data.READ_CACHE !== "on")
      problems.push(
        `prod: READ_CACHE=${config.data.READ_CACHE}; production runs the default read path (on), the one tested and benchmarked`,
      );
    for (const deployment of deployments) {
      const container = containersOf(deployment)[0] ?? {};
      const fromSecret = (container.envFrom ?? []).some(
        (source: Manifest) => source.secretRef?.name === "cheese-store-secrets",
      );
      if (!fromSecret)
        problems.push(`prod: ${label(deployment)} does not read the Secret cheese-store-secrets`);
    }
  }

  if (overlay === "dev") {
    // The replica set names its member mongo-0.mongo, which resolves only if the headless
    // Service publishes not-ready pods, and something must initiate it.
    if (byName("Service", "mongo")?.spec?.publishNotReadyAddresses !== true)
      problems.push("dev: Service/mongo does not publish not-ready addresses; mongo-0.mongo never resolves");
    const init = byName("Job", "mongo-init");
    const script = JSON.stringify(containersOf(init ?? {}).map((c: Manifest) => c.command ?? c.args));
    if (!init || !script.includes("rs.initiate"))
      problems.push("dev: no Job initiates the MongoDB replica set");

    // The same KurrentDB as docker-compose runs.
    const compose = parse(readFileSync(composeFile, "utf8"));
    const composed = compose.services?.kurrentdb;
    if (!composed) problems.push("docker-compose: no service kurrentdb");
    const expected: Record<string, string> = Object.fromEntries(
      Object.entries(composed?.environment ?? {}).map(([k, v]) => [k, String(v)]),
    );
    const kurrentdb = byName("StatefulSet", "kurrentdb");
    if (!kurrentdb) problems.push("dev: no StatefulSet kurrentdb");
    const container = containersOf(kurrentdb ?? {})[0] ?? {};
    const actual: Record<string, string> = Object.fromEntries(
      (container.env ?? []).map((variable: Manifest) => [variable.name, String(variable.value)]),
    );
    if (JSON.stringify(sorted(actual)) !== JSON.stringify(sorted(expected)))
      problems.push(
        `dev: KurrentDB settings differ from docker-compose.yml: ${JSON.stringify(sorted(actual))} vs ${JSON.stringify(sorted(expected))}`,
      );
    if (container.image !== composed?.image)
      problems.push(`dev: KurrentDB image ${container.image} is not compose's ${composed?.image}`);
  }
  return problems;
}

const sorted = (record: Record<string, string>) =>
  Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
