import { generateKeyPairSync } from "node:crypto";
import type { Cheese, TokenClaims } from "@cheese/contracts";
import {
  catalogueRpc,
  customerRpc,
  identityRpc,
  REVOCATION_TTL_MS,
  REVOCATIONS_BUCKET,
  revocationCodec,
  signToken,
} from "@cheese/contracts";
import {
  type Closable,
  type InProcessBroker,
  KvRecords,
  type MessageBus,
  RemoteError,
  serveRpc,
} from "@cheese/messaging";
import { calculateJwkThumbprint, exportJWK } from "jose";

// Stand-ins of the catalogue and customer services over the in-process bus, for the ordering
// service's tests, the gateway's, and the end-to-end suites that run ordering behind the gateway
// in one process.

/** A shipping address an order may carry. */
export const address = { street: "1 Rue du Lait", city: "Meaux", country: "FR" };

/**
 * A catalogue stand-in over the in-process bus: cheeses live in a map the test edits; `down`
 * makes it answer 503 as a catalogue that does not respond would.
 */
export function fakeCatalogue(broker: InProcessBroker) {
  const cheeses = new Map<number, Cheese>();
  let down = false;
  let asked = 0;
  const bus = broker.connect("catalogue");
  const served: Closable = serveRpc(
    bus,
    catalogueRpc.getCheese,
    { queue: "catalogue" },
    async ({ cheeseId }) => {
      asked++;
      if (down)
        throw new RemoteError({ status: 503, type: "service_unavailable", message: "catalogue down" });
      const cheese = cheeses.get(cheeseId);
      if (!cheese) throw new RemoteError({ status: 404, type: "not_found", message: "no such cheese" });
      return { cheese, revision: 0 };
    },
  );
  return {
    add(id: number, fields: Partial<Cheese> = {}): Cheese {
      const cheese: Cheese = { id, name: `Cheese ${id}`, status: "available", pricePerKg: 10, ...fields };
      cheeses.set(id, cheese);
      return cheese;
    },
    set(id: number, fields: Partial<Cheese>) {
      cheeses.set(id, { ...cheeses.get(id)!, ...fields });
    },
    setDown(value: boolean) {
      down = value;
    },
    /** How many lookups it has answered (or refused, while down). */
    asked: () => asked,
    close: () => served.close(),
  };
}

/**
 * The customer service's sealing of personal data, stood in for: a blob names its customer and
 * carries the data (base64, not encrypted: this is about what ordering stores and answers), and
 * opens to null once the customer is `erase`d.
 */
export function fakeCustomerVault(broker: InProcessBroker) {
  const erased = new Set<number>();
  const bus = broker.connect("customer");
  const sealing = serveRpc(bus, customerRpc.sealPersonalData, { queue: "customer" }, async (request) => {
    if (erased.has(request.customerId))
      throw new RemoteError({ status: 404, type: "not_found", message: "customer not found" });
    return { sealed: `fake:${Buffer.from(JSON.stringify(request)).toString("base64")}` };
  });
  const opening = serveRpc(bus, customerRpc.openPersonalData, { queue: "customer" }, async ({ items }) => ({
    items: items.map(({ customerId, sealed }) => {
      const request = JSON.parse(Buffer.from(sealed.slice(5), "base64").toString());
      return request.customerId === customerId && !erased.has(customerId) ? request.data : null;
    }),
  }));
  return {
    erase: (customerId: number) => erased.add(customerId),
    close: () => Promise.all([sealing.close(), opening.close()]),
  };
}

/**
 * Signs tokens as the customer service's authorization server does (`signToken`), with an
 * Ed25519 key of its own (`kid` its thumbprint): `jwks()` is its public key as
 * `customer.identity.jwks` answers it. One nobody publishes signs forged tokens; stand-ins sharing
 * one key (`at`) verify each other's tokens, as the replicas of the customer service do.
 */
export class TokenSigner {
  private readonly publicJwk;

  constructor(
    private readonly clock: { now(): Date } = { now: () => new Date() },
    private readonly keys = generateKeyPairSync("ed25519"),
  ) {
    this.publicJwk = exportJWK(keys.publicKey).then(async (jwk) => ({
      ...jwk,
      kid: await calculateJwkThumbprint(jwk),
    }));
  }

  /** The same key, its tokens issued at `clock`'s time. */
  at(clock: { now(): Date }): TokenSigner {
    return new TokenSigner(clock, this.keys);
  }

  async issue(claims: Omit<TokenClaims, "jti" | "iat" | "exp">, ttlSeconds: number, issuer: string) {
    const key = { kid: (await this.publicJwk).kid, privateKey: this.keys.privateKey };
    return signToken(claims, key, issuer, this.clock.now(), ttlSeconds);
  }

  async jwks(): Promise<{ keys: ({ kty: string; kid: string; alg: string } & Record<string, unknown>)[] }> {
    const { kty, kid, ...rest } = await this.publicJwk;
    return { keys: [{ ...rest, kty: kty!, kid, alg: "EdDSA" }] };
  }
}

/** The revocations bucket, empty, as the customer service makes it. */
export async function makeRevocationsBucket(bus: MessageBus): Promise<void> {
  await new KvRecords(bus, REVOCATIONS_BUCKET, revocationCodec, { ttlMs: REVOCATION_TTL_MS }).open();
}

/**
 * The customer service's authorization server, stood in for where the gateway only verifies
 * tokens: it publishes its signer's key (`customer.identity.jwks`), makes the revocations bucket
 * (holding none), and `issue` signs tokens for `issuer`. It serves none of the OAuth endpoints:
 * those are the customer service's own, driven through the gateway by the end-to-end suites.
 */
export async function fakeIdentity(
  bus: MessageBus,
  issuer: string,
  signer = new TokenSigner(),
  options: { revocations?: boolean } = {},
) {
  // The customer service makes the revocations bucket the gateway watches read only: empty here
  // (not made with `revocations: false`: a customer service that has not started yet).
  if (options.revocations !== false) await makeRevocationsBucket(bus);
  const served = serveRpc(bus, identityRpc.jwks, { queue: "customer" }, () => signer.jwks());
  return {
    issue: (claims: Omit<TokenClaims, "jti" | "iat" | "exp">, ttlSeconds: number) =>
      signer.issue(claims, ttlSeconds, issuer),
    close: () => served.close(),
  };
}
