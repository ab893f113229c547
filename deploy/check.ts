/**
 * `pnpm check:deploy`: what can be checked of the deployment without a Docker engine or a
 * cluster. docker-compose validates the compose file, kustomize renders each overlay and every
 * object is validated against the Kubernetes schemas, the Dockerfile is linted, and the operator
 * console is deployed beside every gateway (checks/console.ts).
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeDeploymentIdentities } from "../apps/launcher/src/nats-identities.ts";
import { composeConsoleProblems, dockerfileConsoleProblems } from "./checks/console.ts";
import { composeCurrentProblems } from "./checks/current-deployment.ts";
import { checkDockerfile } from "./checks/dockerfile.ts";
import { checkOverlay } from "./checks/kubernetes.ts";
import { composeNatsAuthProblems } from "./checks/nats-auth.ts";
import { composeNatsProblems } from "./checks/nats-cluster.ts";
import { composeNodeOptionsProblems, nodeOptionsRefused } from "./checks/node-options.ts";

const deployDir = dirname(fileURLToPath(import.meta.url));
const problems: string[] = [];

// docker-compose needs the .env its services name; check with the example when none exists.
const envFile = join(deployDir, ".env");
const madeEnv = !existsSync(envFile);
if (madeEnv) copyFileSync(join(deployDir, ".env.example"), envFile);
// …and the NATS identities its secrets and nats-servers name (`pnpm nats:identities`).
const identitiesDir = join(deployDir, "nats-identities");
const madeIdentities = !existsSync(identitiesDir);
if (madeIdentities) writeDeploymentIdentities(identitiesDir);
try {
  execFileSync("docker-compose", ["-f", join(deployDir, "docker-compose.yml"), "config", "-q"], {
    stdio: "pipe",
  });
  console.log("docker-compose config: valid");
  problems.push(...composeNodeOptionsProblems(join(deployDir, "docker-compose.yml")));
  problems.push(...composeNatsProblems(join(deployDir, "docker-compose.yml")));
  problems.push(...composeCurrentProblems(join(deployDir, "docker-compose.yml")));
  problems.push(...composeNatsAuthProblems(join(deployDir, "docker-compose.yml")));
  const consoleProblems = composeConsoleProblems(join(deployDir, "docker-compose.yml"));
  if (consoleProblems.length === 0) console.log("docker-compose: the console runs beside the gateway");
  problems.push(...consoleProblems);
} catch (error) {
  const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? (error as Error).message;
  problems.push(`docker-compose config: ${stderr.trim()}`);
} finally {
  if (madeEnv) rmSync(envFile);
  if (madeIdentities) rmSync(identitiesDir, { recursive: true });
}

const refused = nodeOptionsRefused();
if (refused.length === 0) console.log("each service's NODE_OPTIONS: accepted by Node");
problems.push(...refused);

for (const overlay of ["dev", "prod"]) {
  const result = await checkOverlay(join(deployDir, "k8s", "overlays", overlay));
  console.log(`kustomize ${overlay}: ${result.objects} objects rendered and validated`);
  problems.push(...result.problems);
}

const dockerfileProblems = checkDockerfile(join(deployDir, "..", "Dockerfile"));
console.log(`Dockerfile: ${dockerfileProblems.length === 0 ? "passes the lint rules" : "has problems"}`);
problems.push(...dockerfileProblems.map((p) => `Dockerfile: ${p}`));
problems.push(...dockerfileConsoleProblems(join(deployDir, "..", "Dockerfile")));

if (problems.length > 0) {
  console.error(`\n${problems.length} deployment problem(s):\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  process.exit(1);
}
console.log("deployment checks passed");
