import type { BlobStore } from "@cheese/blob-store";
import type { ReadCache } from "@cheese/catalogue/read-cache";
import type { MessageBus } from "@cheese/messaging";
import type { Clock, Logger, ReadinessCheck } from "@cheese/service-kit";
import type { AuthenticationDeps } from "./auth/authenticate.ts";

/** What routes need from the rest of the gateway, built once in `main.ts`. */
export interface GatewayDeps {
  bus: MessageBus;
  /** Image bytes go straight between HTTP and the blob store; they never travel over NATS. */
  blobs: BlobStore;
  logger: Logger;
  /** The time tokens, codes, revocations and rate limits read. */
  clock: Clock;
  rpcTimeoutMs: number;
  /** The origin every URL the API stores or returns is built from (`PUBLIC_URL`), never the Host header. */
  publicUrl: string;
  /** Where `/console` is forwarded (`CONSOLE_URL`); unset: no console behind this gateway. */
  consoleUrl?: string | undefined;
  /** Who may call: the credentials configured, and the issuer of the tokens it verifies. */
  auth: Omit<AuthenticationDeps, "tokens"> & { issuer: string };
  /** Catalogue reads kept between the catalogue's change notices; absent with `READ_CACHE=off`. */
  readCache?: ReadCache | undefined;
  /** Adds a check to the process's own `/readyz` (its health port), as `/readyz` here has it. */
  addCheck?: (name: string, check: ReadinessCheck) => void;
}
