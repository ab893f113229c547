import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { effectiveEnv } from "./manifests.ts";

// biome-ignore lint/suspicious/noExplicitAny: compose files and rendered manifests are walked as plain data
type Manifest = any;

/**
 * The operator console is deployed (docs/architecture.md "The operator console"): it runs beside
 * every gateway, started by the launcher's gateway entry (the image's default command with
 * `SERVICE=gateway`), which sets `CONSOLE_URL` itself. So there must be a gateway, running that
 * entry, not pointed elsewhere with a `CONSOLE_URL` of its own; and the image must keep the
 * console and the API client it calls through.
 */
function gatewayProblems(where: string, env: Record<string, unknown>, command: unknown): string[] {
  const problems: string[] = [];
  if (command !== undefined)
    problems.push(`${where}: replaces the image's command, so the launcher does not start the console`);
  if (env.CONSOLE_URL !== undefined)
    problems.push(`${where}: sets CONSOLE_URL; the launcher points it at the console beside it`);
  return problems;
}

export function composeConsoleProblems(composeFile: string): string[] {
  const compose = parse(readFileSync(composeFile, "utf8"), { merge: true });
  const gateways = Object.entries<Manifest>(compose.services ?? {}).filter(
    ([, definition]) => definition.environment?.SERVICE === "gateway",
  );
  if (gateways.length === 0) return ["docker-compose: no gateway, so no console"];
  return gateways.flatMap(([name, definition]) =>
    gatewayProblems(`docker-compose: ${name}`, definition.environment ?? {}, definition.command),
  );
}

export function kubernetesConsoleProblems(overlay: string, objects: Manifest[]): string[] {
  const gateways = objects
    .filter((o) => o.kind === "Deployment")
    .flatMap((o) =>
      (o.spec?.template?.spec?.containers ?? []).map((container: Manifest) => ({
        where: `kustomize ${overlay}: Deployment/${o.metadata?.name} ${container.name}`,
        container,
        env: effectiveEnv(container, objects),
      })),
    )
    .filter(({ env }) => env.SERVICE === "gateway");
  if (gateways.length === 0) return [`kustomize ${overlay}: no gateway Deployment, so no console`];
  return gateways.flatMap(({ where, container, env }) =>
    gatewayProblems(where, env, container.command ?? container.args),
  );
}

/** The image keeps what the console needs at run time. */
export function dockerfileConsoleProblems(dockerfile: string): string[] {
  const removed = /rm -rf[^\n]*\/prod\/(apps\/console|packages\/client)\b/.exec(
    readFileSync(dockerfile, "utf8"),
  );
  return removed
    ? [`Dockerfile: leaves ${removed[1]} out of the image; the console runs beside every gateway`]
    : [];
}
