import type { EventStore } from "@cheese/event-store";
import type { ReadModelStore } from "@cheese/read-models";
import type { Clock, IdAllocator, Projection } from "@cheese/service-kit";
import type { PasswordChecker } from "../passwords.ts";
import type { PersonalDataVault } from "../personal-data/vault.ts";
import type { CheeseLookup } from "./favourite-cheese.ts";
import type { Revocations } from "./identity/revocations.ts";

/** What the customer service's handlers work with. */
export interface CustomerDeps {
  store: EventStore;
  clock: Clock;
  customerIds: IdAllocator;
  apiKeyIds: IdAllocator;
  vault: PersonalDataVault;
  passwords: PasswordChecker;
  cheeses: CheeseLookup;
  readModels: ReadModelStore;
  /** The api_keys read model, for lookups by hash and the expiry scheduler. */
  apiKeys: Projection;
  apiKeyLifetimeMs: number;
  /** The revocations every gateway checks (an API key revoked, docs/identity.md). */
  revocations: Revocations;
}
