import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { serviceNodeOptions } from "../../apps/launcher/src/node-options.ts";

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked as plain data
type Manifest = any;

/**
 * Each service runs with the V8 options `pnpm start` gives it (apps/launcher/src/node-options.ts):
 * the memory measured and tested is the memory operators get. Every Deployment and compose
 * service that runs a SERVICE sets NODE_OPTIONS to exactly that service's options.
 */
function mismatch(where: string, service: string, actual: unknown): string[] {
  const expected = serviceNodeOptions[service as keyof typeof serviceNodeOptions];
  if (expected === undefined) return [`${where}: SERVICE=${service} is not a service the launcher knows`];
  if (actual === expected) return [];
  return [
    `${where}: NODE_OPTIONS is ${JSON.stringify(actual ?? null)}, the launcher runs ${service} with "${expected}"`,
  ];
}

/**
 * Node refuses some V8 options in NODE_OPTIONS (`--optimize-for-size`, for one) and then does not
 * start at all: each service's string is tried as NODE_OPTIONS of a `node -e ""`.
 */
export function nodeOptionsRefused(): string[] {
  const problems: string[] = [];
  for (const [service, options] of Object.entries(serviceNodeOptions)) {
    const run = spawnSync(process.execPath, ["-e", ""], {
      env: { ...process.env, NODE_OPTIONS: options },
      encoding: "utf8",
    });
    if (run.status !== 0)
      problems.push(`${service}: Node refuses NODE_OPTIONS "${options}": ${run.stderr.trim()}`);
  }
  return problems;
}

export function kubernetesNodeOptionsProblems(overlay: string, objects: Manifest[]): string[] {
  const problems: string[] = [];
  for (const deployment of objects.filter((object) => object.kind === "Deployment")) {
    for (const container of deployment.spec?.template?.spec?.containers ?? []) {
      const env = new Map<string, unknown>((container.env ?? []).map((v: Manifest) => [v.name, v.value]));
      const service = env.get("SERVICE");
      if (typeof service !== "string") continue;
      problems.push(
        ...mismatch(`${overlay}: Deployment/${deployment.metadata?.name}`, service, env.get("NODE_OPTIONS")),
      );
    }
  }
  return problems;
}

export function composeNodeOptionsProblems(composeFile: string): string[] {
  const compose = parse(readFileSync(composeFile, "utf8"), { merge: true });
  const problems: string[] = [];
  for (const [name, definition] of Object.entries<Manifest>(compose.services ?? {})) {
    const service = definition.environment?.SERVICE;
    if (typeof service !== "string") continue;
    problems.push(...mismatch(`docker-compose: ${name}`, service, definition.environment?.NODE_OPTIONS));
  }
  return problems;
}
