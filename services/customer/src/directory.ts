import { apiKeyHash, type CustomerPrincipal, customerRpc, PLAN_CHANGED } from "@cheese/contracts";
import { type Closable, callRpc, type MessageBus, RemoteError } from "@cheese/messaging";
import { contextHeaders, type Logger, type RequestContext } from "@cheese/service-kit";

/** How long a looked-up plan or key owner is reused; revocations do not wait for it (see Revocations). */
const CACHE_FOR_MS = 30_000;
const MAX_ENTRIES = 10_000;

export interface KeyOwner extends CustomerPrincipal {
  keyId: number;
  createdAt: string;
  expiresAt: string;
}

/**
 * What a caller of this service (the gateway, `@cheese/customer/directory`) asks it about the
 * customers behind credentials, cached briefly per replica of the caller: the plan of a customer
 * (from its customerStatus) and the owner of a customer API key (by the key's hash). The service
 * broadcasts every change of a customer's plan (`followPlanChanges`).
 */
export class CustomerDirectory {
  private readonly principals = new Cache<CustomerPrincipal | null>();
  private readonly keys = new Cache<KeyOwner | null>();

  constructor(
    private readonly bus: MessageBus,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * The customer's current plan; null once the customer is deleted. When the customer service
   * does not answer, a customer keeps going on the free plan rather than being refused.
   */
  async principal(customerId: number, context: RequestContext): Promise<CustomerPrincipal | null> {
    const cached = this.principals.get(String(customerId));
    if (cached !== undefined) return cached;
    try {
      const principal = await callRpc(
        this.bus,
        customerRpc.principal,
        { customerId },
        { timeoutMs: this.timeoutMs, headers: contextHeaders(context) },
      );
      this.principals.set(String(customerId), principal);
      return principal;
    } catch (error) {
      if (error instanceof RemoteError && error.body.status === 404) {
        this.principals.set(String(customerId), null);
        return null;
      }
      this.logger.warn({ err: error, customerId }, "customer plan unavailable; using free");
      return { customerId, username: "", customerStatus: "bronze", plan: "free", passwordVersion: 0 };
    }
  }

  /** The owner of a customer API key, or null when the key is unknown, revoked or expired. */
  async keyOwner(key: string, context: RequestContext): Promise<KeyOwner | null> {
    const keyHash = apiKeyHash(key);
    const cached = this.keys.get(keyHash);
    if (cached !== undefined) return cached && Date.parse(cached.expiresAt) > Date.now() ? cached : null;
    try {
      const owner = await callRpc(
        this.bus,
        customerRpc.authenticateApiKey,
        { keyHash },
        { timeoutMs: this.timeoutMs, headers: contextHeaders(context) },
      );
      this.keys.set(keyHash, owner);
      return owner;
    } catch (error) {
      if (error instanceof RemoteError && error.body.status === 401) {
        this.keys.set(keyHash, null);
        return null;
      }
      throw error;
    }
  }

  /**
   * A new tier reaches every replica's cache at once, not when the cached plan runs out: the
   * customer service broadcasts each change of a customer's status, and every replica drops what
   * it cached about that customer (its plan, the owner records of its API keys), so the next
   * request asks. A replica that misses a broadcast (disconnected at that moment) still learns
   * the plan within the cache's 30 s.
   */
  followPlanChanges(): Closable {
    return this.bus.onBroadcast(PLAN_CHANGED, (payload) => {
      const customerId = (payload as { customerId?: unknown } | null)?.customerId;
      if (typeof customerId === "number") this.refresh(customerId);
    });
  }

  /** Drops what this replica cached about the customer (its plan changed): the next request asks. */
  refresh(customerId: number): void {
    this.principals.delete(String(customerId));
    this.keys.deleteWhere((owner) => owner?.customerId === customerId);
  }

  /** Forgets a customer at once on this replica (after its deletion went through here). */
  forget(customerId: number): void {
    this.principals.set(String(customerId), null);
  }
}

/** A small time-bounded map; when full it starts over, which only costs a few lookups. */
class Cache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  deleteWhere(matches: (value: V) => boolean): void {
    for (const [key, entry] of this.entries) if (matches(entry.value)) this.entries.delete(key);
  }

  set(key: string, value: V): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, { value, until: Date.now() + CACHE_FOR_MS });
  }
}
