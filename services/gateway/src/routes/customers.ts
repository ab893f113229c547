import * as contracts from "@cheese/contracts";
import { hourlyRate } from "@cheese/rate-limits";
import { HTTPException } from "hono/http-exception";
import type { Caller } from "../env.ts";
import { refusal } from "../errors.ts";
import { noStore } from "../middleware/no-store.ts";
import { callService, forward } from "../rpc.ts";
import {
  commonResponses,
  credentialResponses,
  errorResponse,
  jsonBody,
  jsonResponse,
  validationErrorResponse,
} from "./responses.ts";
import { type Route, type RouteDeps, routes } from "./route.ts";

const route = routes({ tags: ["Customers"], use: [noStore], responses: commonResponses });

const customerBody = jsonBody(contracts.CustomerInput);
const ownAccount = credentialResponses("another customer's account, or credentials of the wrong kind");
const passwordChecked = credentialResponses(
  "another customer's account, credentials of the wrong kind, or a wrong currentPassword",
);

const register = route(
  {
    method: "post",
    path: "/customer",
    operationId: "createCustomer",
    access: { public: true },
    request: { body: customerBody },
    responses: {
      201: jsonResponse("the new customer", contracts.Customer),
      409: errorResponse("username or email exists"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const fields = contracts.toCustomerFields(c.req.valid("json"));
    const { customer } = await callService(deps, c, contracts.customerRpc.register, { fields });
    c.header("Location", `${deps.publicUrl}/v2/customer/${encodeURIComponent(customer.username)}`);
    return c.json(customer, 201);
  },
);

const registerMany = route(
  {
    method: "post",
    path: "/customer/createMultiple",
    operationId: "createCustomersWithArray",
    access: { public: true },
    request: {
      body: jsonBody(contracts.CustomerBatchInput),
    },
    responses: {
      200: jsonResponse("what was created, and why the rest was not", contracts.CustomerBatchResult),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const elements = c.req.valid("json");
    // Each element is a registration: it counts against the caller's rate limit as one would.
    await c.get("spend")?.(elements.length - 1, `a batch of ${elements.length} registrations`);
    return c.json(await callService(deps, c, contracts.customerRpc.registerBatch, { elements }), 200);
  },
);

const login = route(
  {
    method: "post",
    path: "/customer/login",
    operationId: "loginCustomer",
    access: { public: true },
    request: { body: jsonBody(contracts.LoginInput) },
    responses: {
      200: { ...jsonResponse("the session token", contracts.LoginResult), headers: contracts.loginHeaders },
      401: errorResponse("invalid username or password"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    // The customer service checks the password and signs the session token.
    const { token, expiresAt, plan } = await callService(deps, c, contracts.identityRpc.startSession, {
      ...c.req.valid("json"),
      issuer: deps.auth.issuer,
    });
    c.header("X-Rate-Limit", String(hourlyRate(deps.plans[plan])));
    c.header("X-Expires-After", expiresAt);
    return c.json({ token, expiresAt }, 200);
  },
);

const logout = route(
  {
    method: "get",
    path: "/customer/logout",
    operationId: "logoutCustomer",
    access: { bearer: true },
    responses: { ...ownAccount, 204: { description: "logged out" } },
  },
  (deps) => async (c) => {
    const token = c.get("caller").token;
    if (token) await deps.identity.revocations.revokeToken(token.jti, token.exp * 1000);
    return c.body(null, 204);
  },
);

const getCustomer = route(
  {
    method: "get",
    path: "/customer/{username}",
    operationId: "getCustomerByName",
    access: { apiKey: true, bearer: true },
    request: { params: contracts.UsernameParam },
    responses: {
      ...ownAccount,
      200: jsonResponse("the customer", contracts.Customer),
      404: errorResponse("customer not found"),
    },
  },
  forward(
    contracts.customerRpc.get,
    200,
    (c) => ({ ...c.req.valid("param"), asCustomer: actingCustomer(c.get("caller"), true) }),
    (reply) => reply.customer,
  ),
);

const replaceCustomer = route(
  {
    method: "put",
    path: "/customer/{username}",
    operationId: "updateCustomer",
    access: { bearer: true },
    request: {
      params: contracts.UsernameParam,
      body: jsonBody(contracts.CustomerUpdateInput),
    },
    responses: {
      ...passwordChecked,
      200: jsonResponse("the customer", contracts.Customer),
      404: errorResponse("customer not found"),
      409: errorResponse("the new username or email belongs to someone else"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const { username } = c.req.valid("param");
    const { currentPassword, ...input } = c.req.valid("json");
    const caller = c.get("caller");
    const customerId = actingCustomer(caller, false)!;
    const { customer, passwordVersion } = await callService(deps, c, contracts.customerRpc.replace, {
      username,
      asCustomer: customerId,
      fields: contracts.toCustomerFields(input),
      currentPassword,
      session: caller.token?.jti ?? null,
    });
    // A new password: the older credentials end on every replica once customer.password_changed
    // is through (the customer service's handlers/identity/password-changes.ts); the answer
    // waits for that.
    if (passwordVersion !== null) {
      const late =
        "the password is changed, but ending the other sessions and keys is taking longer; they will stop working shortly";
      await untilRevoked(deps, customerId, late, passwordVersion);
    }
    return c.json(customer, 200);
  },
);

const deleteCustomer = route(
  {
    method: "delete",
    path: "/customer/{username}",
    operationId: "deleteCustomer",
    access: { bearer: true },
    request: {
      params: contracts.UsernameParam,
      body: jsonBody(contracts.CustomerDeletion),
    },
    responses: {
      ...passwordChecked,
      204: { description: "erased" },
      404: errorResponse("customer not found"),
      422: validationErrorResponse,
    },
  },
  (deps) => async (c) => {
    const { username } = c.req.valid("param");
    const { customerId } = await callService(deps, c, contracts.customerRpc.delete, {
      username,
      asCustomer: actingCustomer(c.get("caller"), false)!,
      currentPassword: c.req.valid("json").currentPassword,
    });
    // Everything the customer held stops working on every replica (sessions, OAuth tokens, keys)
    // once customer.deleted is through (the customer service's handlers/identity/erasure.ts): the
    // answer waits for that.
    const late =
      "the account is deleted, but revoking its sessions and keys is taking longer; they will stop working shortly";
    await untilRevoked(deps, customerId, late);
    deps.identity.customers.forget(customerId);
    return c.body(null, 204);
  },
);

export const customersRoutes: Route[] = [
  register,
  registerMany,
  login,
  logout,
  getCustomer,
  replaceCustomer,
  deleteCustomer,
];

/**
 * Waits until every replica refuses the customer's older credentials (below `passwordVersion`, or
 * all of them); 503 saying `late` when that takes longer than a call to a service may.
 */
async function untilRevoked(
  deps: RouteDeps,
  customerId: number,
  late: string,
  passwordVersion?: number,
): Promise<void> {
  if (await deps.identity.revocations.whenCustomerRevoked(customerId, deps.rpcTimeoutMs, passwordVersion)) {
    return;
  }
  throw refusal(503, late);
}

/**
 * Whose rights the request carries to the customer service: the customer's own id, or null for
 * an operator key when operators may act (reads).
 */
export function actingCustomer(caller: Caller, operatorAllowed: boolean): number | null {
  if (caller.kind === "customer" && caller.customer) return Number(caller.customer.id);
  if (caller.kind === "operator" && operatorAllowed) return null;
  throw new HTTPException(403, { message: "these credentials do not grant this operation" });
}
