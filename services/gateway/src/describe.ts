import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileBlobStore } from "@cheese/blob-store";
import { oauthClientsSchema } from "@cheese/contracts";
import { createInProcessBroker } from "@cheese/messaging";
import { createLogger, systemClock } from "@cheese/service-kit";
import { createApp } from "./app.ts";
import { apiKeysSchema } from "./auth/credentials.ts";

/**
 * The OpenAPI document the gateway serves at `/v2/openapi.json`, without a running system: the
 * gateway's app over an in-process bus, asked once. The document depends on no configuration,
 * so this is what every gateway serves (the client's generation check compares the two).
 */
export async function describeApi(): Promise<object> {
  const dir = mkdtempSync(join(tmpdir(), "cheese-describe-"));
  const bus = createInProcessBroker().connect("gateway");
  try {
    const issuer = "http://127.0.0.1:8080";
    const app = createApp({
      bus,
      blobs: createFileBlobStore({ dir: join(dir, "blobs") }),
      logger: createLogger("gateway", "silent"),
      clock: systemClock,
      rpcTimeoutMs: 1000,
      publicUrl: issuer,
      auth: {
        operatorKeys: apiKeysSchema.parse(""),
        oauthClients: oauthClientsSchema.parse("[]"),
        anonymousPlan: "free",
        issuer,
      },
    });
    const response = await app.request("/v2/openapi.json");
    if (!response.ok) throw new Error(`the gateway answered ${response.status} for its document`);
    return (await response.json()) as object;
  } finally {
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
