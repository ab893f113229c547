import { readFileSync } from "node:fs";
import { dirname, join, posix, resolve } from "node:path";
import { parse } from "yaml";
import { publicKeyOfSeed } from "../../apps/launcher/src/nats-identities.ts";
import {
  authorizationConfigFromEnvironment,
  natsIdentities,
  natsServices,
  publicKeyVariable,
  seedFileName,
} from "../../packages/messaging/src/permissions.ts";
import { effectiveEnv } from "./manifests.ts";

// biome-ignore lint/suspicious/noExplicitAny: compose files and rendered manifests are walked as plain data
type Manifest = any;

/**
 * NATS lets in only the identities of packages/messaging/src/permissions.ts, wherever the system
 * is deployed (docs/security.md, M2; docs/operations.md, "NATS identities"): every nats-server
 * loads that authorization (deploy/nats/authorization.conf, the public keys from its
 * environment), and every service is given its own nkey seed from a secret, in the directory
 * NATS_CREDENTIALS names. Without it, any process on the network may call every internal RPC.
 */
const AUTHORIZATION = authorizationConfigFromEnvironment();
const USER_SEED = /^SU[A-Z2-7]{56}\s*$/;

/** The authorization file's problems: it must be what the code allows, word for word. */
export function authorizationFileProblems(file: string, where: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [`${where}: ${file} is missing`];
  }
  return text.endsWith(AUTHORIZATION)
    ? []
    : [
        `${where}: ${file} is not packages/messaging/src/permissions.ts's authorization (pnpm check:deploy prints it)`,
      ];
}

/** The value following `flag` in a server's arguments. */
function flagValue(args: string[], ...flags: string[]): string | undefined {
  const at = args.findIndex((arg) => flags.includes(arg));
  return at === -1 ? undefined : args[at + 1];
}

/** What a nats-server given `variables` lacks to read every identity's public key. */
function keyProblems(where: string, variables: Record<string, unknown>): string[] {
  const missing = natsIdentities.map(publicKeyVariable).filter((name) => !variables[name]);
  return missing.length > 0 ? [`${where}: no ${missing.join(", ")} for the authorization to read`] : [];
}

/** KEY=value lines of an env file. */
function readEnvFile(file: string): Record<string, string> {
  try {
    return Object.fromEntries(
      readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => /^[A-Z_][A-Z0-9_]*=/.test(line))
        .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
    );
  } catch {
    return {};
  }
}

export function composeNatsAuthProblems(composeFile: string): string[] {
  const base = dirname(resolve(composeFile));
  const compose = parse(readFileSync(composeFile, "utf8"), { merge: true });
  const services = Object.entries<Manifest>(compose.services ?? {});
  const problems: string[] = [];
  for (const [name, definition] of services.filter(([, d]) => String(d.image ?? "").startsWith("nats:"))) {
    const where = `docker-compose: ${name}`;
    const args: string[] = (definition.command ?? []).map(String);
    const config = flagValue(args, "-c", "--config");
    const mount = (definition.volumes ?? [])
      .map(String)
      .map((volume: string) => volume.split(":"))
      .find(([, target]: string[]) => target === config);
    if (!config || !mount) {
      problems.push(`${where}: loads no authorization (--config from a mounted file): NATS lets anyone in`);
      continue;
    }
    problems.push(...authorizationFileProblems(resolve(base, mount[0] as string), where));
    const envFiles = [definition.env_file ?? []].flat().map((file: string) => resolve(base, file));
    const variables = Object.assign({}, ...envFiles.map(readEnvFile), definition.environment ?? {});
    problems.push(...keyProblems(where, variables));
  }
  const secrets = compose.secrets ?? {};
  for (const [name, definition] of services) {
    const service = definition.environment?.SERVICE;
    if (typeof service !== "string") continue;
    const where = `docker-compose: ${name}`;
    const dir = definition.environment?.NATS_CREDENTIALS;
    if (!dir) {
      problems.push(`${where}: NATS_CREDENTIALS is unset: it connects to NATS without an identity`);
      continue;
    }
    const wanted = posix.join(String(dir), seedFileName(service));
    const given = (definition.secrets ?? []).find((secret: Manifest) => {
      const target = typeof secret === "string" ? secret : (secret.target ?? secret.source);
      return posix.resolve("/run/secrets", String(target)) === wanted;
    });
    if (!given) problems.push(`${where}: no secret gives it ${wanted}, its NATS identity`);
    else {
      const source = typeof given === "string" ? given : given.source;
      if (!secrets[source]?.file) problems.push(`${where}: its secret ${source} names no file`);
    }
  }
  return problems;
}

/** The Secret volume mounted at `dir` in a pod, if any: its Secret's name. */
function secretMountedAt(container: Manifest, podSpec: Manifest, dir: string): string | undefined {
  for (const mount of container.volumeMounts ?? []) {
    if (posix.normalize(mount.mountPath) !== posix.normalize(dir)) continue;
    const volume = (podSpec.volumes ?? []).find((v: Manifest) => v.name === mount.name);
    if (volume?.secret) return volume.secret.secretName;
  }
  return undefined;
}

export function kubernetesNatsAuthProblems(
  overlay: "dev" | "prod",
  objects: Manifest[],
  overlayDir: string,
): string[] {
  const problems: string[] = [];
  const named = (kind: string, name: unknown) =>
    objects.find((o) => o.kind === kind && o.metadata?.name === name);
  /** The public key of each service's seed in its rendered Secret (dev), to compare with NATS's. */
  const seedKeys = new Map<string, string>();
  for (const deployment of objects.filter((o) => o.kind === "Deployment")) {
    const podSpec = deployment.spec?.template?.spec ?? {};
    const container = podSpec.containers?.[0] ?? {};
    const where = `${overlay}: Deployment/${deployment.metadata?.name}`;
    const service = (container.env ?? []).find((v: Manifest) => v.name === "SERVICE")?.value;
    if (!natsServices.includes(service)) continue;
    const dir = effectiveEnv(container, objects).NATS_CREDENTIALS;
    if (!dir) {
      problems.push(`${where}: NATS_CREDENTIALS is unset: it connects to NATS without an identity`);
      continue;
    }
    const secretName = secretMountedAt(container, podSpec, dir);
    if (!secretName) {
      problems.push(`${where}: no Secret is mounted at NATS_CREDENTIALS ${dir}`);
      continue;
    }
    if (!String(secretName).startsWith(`cheese-store-nats-${service}`))
      problems.push(
        `${where}: mounts ${secretName}, not its own identity's Secret cheese-store-nats-${service}`,
      );
    // In dev the Secret is rendered: it must hold this service's seed and no other's.
    const secret = named("Secret", secretName);
    if (secret) {
      const data = Object.fromEntries(
        Object.entries<string>(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]),
      );
      const keys = Object.keys(data);
      if (keys.length !== 1 || !USER_SEED.test(data[seedFileName(service)] ?? ""))
        problems.push(`${where}: Secret ${secretName} does not hold ${seedFileName(service)} (a seed) alone`);
      else seedKeys.set(service, publicKeyOfSeed(data[seedFileName(service)] as string));
    }
  }
  if (overlay === "dev") {
    const set = objects.find(
      (o) =>
        o.kind === "StatefulSet" &&
        (o.spec?.template?.spec?.containers ?? []).some((c: Manifest) => String(c.image).startsWith("nats:")),
    );
    if (!set) return [...problems, "dev: no NATS StatefulSet"];
    const where = `dev: StatefulSet/${set.metadata?.name}`;
    const podSpec = set.spec.template.spec;
    const container = podSpec.containers.find((c: Manifest) => String(c.image).startsWith("nats:"));
    const config = flagValue((container.args ?? []).map(String), "-c", "--config");
    const mount = (container.volumeMounts ?? []).find(
      (m: Manifest) => config && !posix.relative(m.mountPath, config).startsWith(".."),
    );
    const volume = (podSpec.volumes ?? []).find((v: Manifest) => v.name === mount?.name);
    const configMap = named("ConfigMap", volume?.configMap?.name);
    if (!config || !configMap) {
      problems.push(`${where}: loads no authorization (--config from a ConfigMap): NATS lets anyone in`);
    } else {
      const text = configMap.data?.[posix.basename(config)] ?? "";
      if (!text.endsWith(AUTHORIZATION))
        problems.push(`${where}: its ${posix.basename(config)} is not permissions.ts's authorization`);
      problems.push(...authorizationFileProblems(join(overlayDir, posix.basename(config)), where));
    }
    const variables = effectiveEnv(container, objects);
    problems.push(...keyProblems(where, variables));
    for (const [service, key] of seedKeys) {
      const variable = publicKeyVariable(service as (typeof natsServices)[number]);
      if (variables[variable] && variables[variable] !== key)
        problems.push(
          `${where}: ${variable} is not the public key of ${service}'s seed: it would be refused`,
        );
    }
  }
  return problems;
}
