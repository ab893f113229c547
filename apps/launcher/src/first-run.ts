import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { ConfigError } from "@cheese/service-kit/launch";
import { z } from "zod";

/**
 * A first run that works: outside production, a `pnpm start` with neither `API_KEYS` nor
 * `OAUTH_CLIENTS` makes a development operator key and a development confidential OAuth client
 * once, keeps them under DATA_DIR, gives them to the services and prints them with what to do
 * next. Production never makes credentials: the gateway refuses to start without any
 * (`services/gateway/src/config.ts`).
 */
export const DEV_CREDENTIALS_FILE = "dev-credentials.json";

const DevCredentials = z.object({
  operatorKey: z.string().min(16),
  oauthClient: z.object({ id: z.string().min(1), secret: z.string().min(16) }),
});
export type DevCredentials = z.infer<typeof DevCredentials>;

const allScopes = ["read:cheeses", "write:cheeses", "read:orders", "write:orders"];

/** True when neither variable names a credential (unset, empty, or an empty JSON array). */
export function noCredentialsConfigured(env: Record<string, string | undefined>): boolean {
  const clients = (env.OAUTH_CLIENTS ?? "").trim();
  return (env.API_KEYS ?? "").trim() === "" && (clients === "" || /^\[\s*\]$/.test(clients));
}

/**
 * The development credentials of this DATA_DIR: read when a previous start made them, made and
 * kept (mode 0600, created exclusively, so two starts at once agree) otherwise.
 */
export function developmentCredentials(dataDir: string): { credentials: DevCredentials; made: boolean } {
  const file = join(dataDir, DEV_CREDENTIALS_FILE);
  const made: DevCredentials = {
    operatorKey: `dev-operator-${randomBytes(18).toString("base64url")}`,
    oauthClient: { id: "dev-client", secret: randomBytes(24).toString("base64url") },
  };
  mkdirSync(dataDir, { recursive: true });
  try {
    writeFileSync(file, `${JSON.stringify(made, null, 2)}\n`, { flag: "wx", mode: 0o600 });
    return { credentials: made, made: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  let text = "";
  try {
    text = readFileSync(file, "utf8");
    JSON.parse(text);
  } catch {
    text = "null";
  }
  const kept = DevCredentials.safeParse(JSON.parse(text));
  if (!kept.success) {
    throw new ConfigError(`${file} is not a development credentials file: delete it to make new ones`);
  }
  return { credentials: kept.data, made: false };
}

/** The variables that give the services these credentials, in the format they read. */
export function credentialsEnv(credentials: DevCredentials): { API_KEYS: string; OAUTH_CLIENTS: string } {
  return {
    API_KEYS: `${credentials.operatorKey}:enterprise`,
    OAUTH_CLIENTS: JSON.stringify([
      { ...credentials.oauthClient, scopes: allScopes, redirectUris: [], plan: "enterprise" },
    ]),
  };
}

/** What the launcher prints once the system is ready: the credentials, the pages, a first cheese. */
export function firstRunBanner(
  credentials: DevCredentials,
  options: { url: string; dataDir: string; made: boolean },
): string {
  const { url } = options;
  const { id, secret } = credentials.oauthClient;
  const path = join(options.dataDir, DEV_CREDENTIALS_FILE);
  const file = relative(process.cwd(), path).startsWith("..") ? path : relative(process.cwd(), path);
  const token =
    `TOKEN=$(curl -s -u ${id}:${secret} -d grant_type=client_credentials ${url}/oauth/token` +
    ` | node -p 'JSON.parse(require("fs").readFileSync(0)).access_token')`;
  const create =
    `curl -s ${url}/v2/cheeses -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json'` +
    ` -d '{"name":"Comté","pricePerKg":24.5}'`;
  return [
    `development credentials (${options.made ? "made now" : "made at the first start"}, kept in ${file};` +
      " NODE_ENV is not production and neither API_KEYS nor OAUTH_CLIENTS is set):",
    `  operator API key    ${credentials.operatorKey}   (X-API-Key; signs in to the console)`,
    `  OAuth client        ${id} / ${secret}   (client credentials, every scope)`,
    `  API reference       ${url}/docs`,
    `  operator console    ${url}/console`,
    "  create a cheese:",
    `    ${token}`,
    `    ${create}`,
  ].join("\n");
}
