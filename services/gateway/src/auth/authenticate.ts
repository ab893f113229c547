import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { GatewayEnv } from "../env.ts";
import type { Caller } from "./access.ts";
import {
  allScopes,
  anonymousCaller,
  hashKey,
  type OAuthClient,
  type OperatorKey,
  type Plan,
} from "./credentials.ts";
import type { TokenService } from "./tokens.ts";

export interface AuthenticationDeps {
  tokens: TokenService;
  operatorKeys: Map<string, OperatorKey>;
  oauthClients: Map<string, OAuthClient>;
  anonymousPlan: Plan;
}

/**
 * Works out who is calling, for every request: an API key, a bearer token, or nobody (counted
 * by client IP). Bad credentials do not stop the request here; they are remembered and the
 * route's access rule answers 401 (public routes ignore them).
 */
export function authenticate(deps: AuthenticationDeps) {
  return createMiddleware<GatewayEnv>(async (c, next) => {
    const result = await identify(c, deps);
    c.set("caller", result.caller);
    if (result.problem) c.set("authProblem", result.problem);
    await next();
  });
}

async function identify(
  c: Context<GatewayEnv>,
  deps: AuthenticationDeps,
): Promise<{ caller: Caller; problem?: string }> {
  const anonymous = anonymousCaller(clientIp(c), deps.anonymousPlan);
  const apiKey = c.req.header("x-api-key");
  if (apiKey !== undefined) {
    const operator = deps.operatorKeys.get(hashKey(apiKey));
    if (!operator) return { caller: anonymous, problem: "unknown API key" };
    return {
      caller: { kind: "operator", id: operator.id, plan: operator.plan, scopes: new Set(), via: "api_key" },
    };
  }
  const authorization = c.req.header("authorization");
  if (authorization === undefined) return { caller: anonymous };
  const match = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!match) return { caller: anonymous, problem: "Authorization must be 'Bearer <token>'" };
  try {
    const claims = await deps.tokens.verify(match[1]!);
    const scopes = new Set(claims.scopes.filter((s) => allScopes.includes(s)));
    if (claims.kind === "client") {
      const client = deps.oauthClients.get(claims.sub);
      if (!client) return { caller: anonymous, problem: "token of an unknown client" };
      return {
        caller: { kind: "client", id: `client:${client.id}`, plan: client.plan, scopes, via: "oauth" },
      };
    }
    return {
      caller: {
        kind: "customer",
        id: `cust:${claims.sub}`,
        plan: "free",
        scopes,
        customer: { id: claims.sub, username: claims.username ?? "" },
        via: claims.kind === "session" ? "bearer" : "oauth",
      },
    };
  } catch (error) {
    return { caller: anonymous, problem: `invalid token: ${(error as Error).message}` };
  }
}

function clientIp(c: Context<GatewayEnv>): string {
  try {
    return getConnInfo(c).remote.address ?? "unknown";
  } catch {
    return "unknown";
  }
}
