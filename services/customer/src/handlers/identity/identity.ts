import {
  type CustomerPrincipal,
  identityRpc,
  type OAuthClient,
  type OAuthGrant,
  OPERATOR_SESSION_TTL_SECONDS,
} from "@cheese/contracts";
import { type MessageBus, RemoteError, type RpcDefinition, type ServedResult } from "@cheese/messaging";
import type { Clock, Logger } from "@cheese/service-kit";
import type { z } from "zod";
import { revokeDeletedCustomers } from "./erasure.ts";
import { type Grant, OAuthGrants } from "./oauth-grants.ts";
import { oauthServer } from "./oauth-server.ts";
import { revokeOnPasswordChange } from "./password-changes.ts";
import { Revocations } from "./revocations.ts";
import type { SigningKey } from "./signing-key.ts";
import { TokenIssuer } from "./tokens.ts";

/** Lifetime of a session token (bearer_auth). */
const SESSION_TTL_SECONDS = 24 * 3600;
const SESSION_SCOPES = ["read:cheeses", "read:orders", "write:orders"] as const;

export interface IdentityOptions {
  bus: MessageBus;
  logger: Logger;
  clock: Clock;
  signingKey: SigningKey;
  clients: Map<string, OAuthClient>;
  /** Lifetime of an authorization code (OAUTH_CODE_TTL). */
  codeTtlMs: number;
  /** The accounts: a password check (401 when wrong) and a customer by id (404 once deleted). */
  accounts: {
    login(username: string, password: string): Promise<CustomerPrincipal>;
    principal(customerId: number): Promise<CustomerPrincipal>;
  };
}

export interface Identity {
  tokens: TokenIssuer;
  revocations: Revocations;
  /** The customer's live grants as the customer sees them (the list, the data export). */
  grantsOf(customerId: number): Promise<OAuthGrant[]>;
  /** Stops the consumers. */
  close(): Promise<void>;
}

type Serve = <Request extends z.ZodType, Response extends z.ZodType>(
  definition: RpcDefinition<Request, Response>,
  handler: (request: z.output<Request>) => Promise<ServedResult<z.input<Response>>>,
) => void;

/**
 * The identity part of the customer service: the OAuth 2.0 authorization server and the issuer of
 * session tokens (docs/identity.md), its state (codes, refresh tokens, grants) and the revocations
 * every gateway checks. `serve` answers its RPCs; the consumers end what a deletion or a password
 * change ends. The service's wiring calls it, and so do the gateway's tests, which need its
 * endpoints behind the gateway.
 */
export async function startIdentity(options: IdentityOptions, serve: Serve): Promise<Identity> {
  const { bus, clock, logger } = options;
  const tokens = new TokenIssuer(options.signingKey, clock);
  const revocations = new Revocations(bus, clock);
  // Made before any gateway reads it: gateways open it read only.
  await revocations.open();
  const grants = new OAuthGrants(bus, options.codeTtlMs, revocations, clock);
  const server = oauthServer({
    tokens,
    grants,
    revocations,
    clients: options.clients,
    accounts: options.accounts,
  });
  const consumers = [
    revokeDeletedCustomers(bus, { revocations, grants }, logger),
    revokeOnPasswordChange(bus, { revocations, grants }, logger),
  ];

  serve(identityRpc.jwks, async () => tokens.jwks());
  serve(identityRpc.http, async ({ method, target, headers, body, publicUrl, issuer }) => {
    const hasBody = method !== "GET" && method !== "HEAD";
    const response = await server.fetch(
      new Request(new URL(target, publicUrl), { method, headers, ...(hasBody ? { body } : {}) }),
      { publicUrl, issuer },
    );
    return {
      status: response.status,
      headers: Object.fromEntries(response.headers),
      body: await response.text(),
    };
  });
  serve(identityRpc.startSession, async ({ username, password, issuer }) => {
    const principal = await options.accounts.login(username, password);
    const { token, expiresAt } = await tokens.issue(
      {
        kind: "session",
        sub: String(principal.customerId),
        username: principal.username,
        scopes: [...SESSION_SCOPES],
        passwordVersion: principal.passwordVersion,
      },
      SESSION_TTL_SECONDS,
      issuer,
    );
    return {
      token,
      expiresAt: expiresAt.toISOString(),
      customerId: principal.customerId,
      username: principal.username,
      plan: principal.plan,
    };
  });
  serve(identityRpc.startOperatorSession, async ({ operatorId, issuer }) => {
    const { token, expiresAt } = await tokens.issue(
      { kind: "operator", sub: operatorId, scopes: [] },
      OPERATOR_SESSION_TTL_SECONDS,
      issuer,
    );
    return { token, expiresAt: expiresAt.toISOString() };
  });
  serve(identityRpc.revokeToken, async ({ jti, until }) => {
    await revocations.revokeToken(jti, until);
    return {};
  });
  const grantsOf = async (customerId: number) => (await grants.grantsOf(customerId)).map(grantView);
  serve(identityRpc.listGrants, async ({ customerId }) => ({ grants: await grantsOf(customerId) }));
  serve(identityRpc.revokeGrant, async ({ customerId, grantId }) => {
    if (!(await grants.revokeGrant(customerId, grantId))) {
      throw new RemoteError({ status: 404, type: "not_found", message: `grant ${grantId} not found` });
    }
    return {};
  });
  return {
    tokens,
    revocations,
    grantsOf,
    close: async () => void (await Promise.all(consumers.map((consumer) => consumer.close()))),
  };
}

/** A live grant as a customer sees it. */
function grantView(grant: Grant): OAuthGrant {
  return {
    id: grant.id,
    clientId: grant.clientId,
    scopes: grant.scopes,
    createdAt: new Date(grant.createdAt).toISOString(),
    lastUsedAt: new Date(grant.lastUsedAt).toISOString(),
    expiresAt: new Date(grant.expiresAt).toISOString(),
  };
}
