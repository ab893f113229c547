/**
 * The identity part of the service on its own (`@cheese/customer/identity`): what the service's
 * wiring starts, for the tests that need the authorization server behind a gateway without the
 * whole customer service (the accounts then stood in for).
 */
export { type Identity, type IdentityOptions, startIdentity } from "./handlers/identity/identity.ts";
export { loadSigningKey } from "./handlers/identity/signing-key.ts";
export { TokenIssuer } from "./handlers/identity/tokens.ts";
