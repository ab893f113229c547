import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubernetesConsoleProblems } from "./console.ts";
import { kubernetesCurrentProblems } from "./current-deployment.ts";
import { overlayRuleProblems } from "./kubernetes-rules.ts";
import { kubernetesNatsAuthProblems } from "./nats-auth.ts";
import { kubernetesNatsProblems } from "./nats-cluster.ts";
import { kubernetesNodeOptionsProblems } from "./node-options.ts";

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string };
}

/**
 * Renders an overlay with `kubectl kustomize` and validates every object against the Kubernetes
 * OpenAPI schemas shipped in `kubernetes-models`. Returns the problems found.
 */
export async function checkOverlay(dir: string): Promise<{ objects: number; problems: string[] }> {
  const rendered = execFileSync("kubectl", ["kustomize", dir], { encoding: "utf8" });
  const objects = parseAllDocuments(rendered).map((doc) => unwrapSecretData(doc.toJS() as KubeObject));
  const problems: string[] = [];
  for (const object of objects) {
    const label = `${object.kind}/${object.metadata?.name ?? "?"}`;
    try {
      const models = (await import(`kubernetes-models/${object.apiVersion}`)) as Record<
        string,
        new (
          data: unknown,
        ) => { validate(): void }
      >;
      const Model = models[object.kind];
      if (!Model) throw new Error(`unknown kind ${object.kind} in ${object.apiVersion}`);
      new Model(object).validate();
    } catch (error) {
      problems.push(`${dir}: ${label}: ${(error as Error).message.split("\n").slice(0, 5).join(" ")}`);
    }
  }
  const names = objects.map((o) => `${o.kind}/${o.metadata?.name}`);
  for (const required of [
    "Deployment",
    "Service",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "NetworkPolicy",
  ]) {
    if (!names.some((n) => n.startsWith(`${required}/`))) problems.push(`${dir}: no ${required}`);
  }
  const overlay = dir.endsWith("prod") ? "prod" : "dev";
  problems.push(...overlayRuleProblems(overlay, objects, join(dir, "..", "..", "..", "docker-compose.yml")));
  problems.push(...kubernetesNodeOptionsProblems(overlay, objects));
  problems.push(...kubernetesNatsProblems(overlay, objects));
  problems.push(...kubernetesNatsAuthProblems(overlay, objects, dir));
  problems.push(...kubernetesCurrentProblems(overlay, objects));
  problems.push(...kubernetesConsoleProblems(overlay, objects));
  return { objects: objects.length, problems };
}

/**
 * kustomize wraps long base64 values of Secrets over several lines; the API server's decoder
 * ignores the newlines but the schema's `byte` pattern does not, so they are joined first.
 */
function unwrapSecretData(object: KubeObject & { data?: Record<string, string> }): KubeObject {
  if (object.kind !== "Secret" || !object.data) return object;
  const data = Object.fromEntries(Object.entries(object.data).map(([k, v]) => [k, v.replace(/\s+/g, "")]));
  return { ...object, data } as KubeObject;
}
