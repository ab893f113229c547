import type { CustomerPrincipal } from "@cheese/contracts";
import { type Customer, planForStatus } from "@cheese/contracts";
import { notFound, type RequestContext, unauthorized } from "@cheese/service-kit";
import type { CustomerData } from "../domain/customer.ts";
import type { CustomerDeps } from "./deps.ts";
import { findByUsername, loadCustomer, ownedCustomer } from "./lookup.ts";
import { customerView } from "./view.ts";

export async function getCustomer(
  deps: CustomerDeps,
  request: { username: string; asCustomer: number | null },
  context: RequestContext,
): Promise<Customer> {
  const { customer } = await ownedCustomer(deps.store, request.username, request.asCustomer);
  return customerView(deps, customer, context);
}

/**
 * Checks a password. An unknown or deleted user costs one argon2 verification too (against a
 * dummy hash), so the answer takes the same time and does not reveal which usernames exist.
 */
export async function login(
  deps: Pick<CustomerDeps, "store" | "vault" | "passwords">,
  request: { username: string; password: string },
): Promise<CustomerPrincipal> {
  const found = await findByUsername(deps.store, request.username);
  const personal = found
    ? await deps.vault.open(found.customer.customerId, found.customer.personal)
    : undefined;
  const valid = await deps.passwords.verify(personal?.passwordHash, request.password);
  if (!valid || !found) throw unauthorized("invalid username or password");
  return principalOf(found.customer);
}

export async function principal(
  deps: Pick<CustomerDeps, "store">,
  customerId: number,
): Promise<CustomerPrincipal> {
  const loaded = await loadCustomer(deps.store, customerId);
  if (!loaded) throw notFound(`customer ${customerId} not found`);
  return principalOf(loaded.customer);
}

export function principalOf(customer: CustomerData): CustomerPrincipal {
  return {
    customerId: customer.customerId,
    username: customer.username,
    customerStatus: customer.customerStatus,
    plan: planForStatus(customer.customerStatus),
    passwordVersion: customer.passwordVersion,
  };
}
