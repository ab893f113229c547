import type { Cheese, Customer } from "@cheese/contracts";
import { notFound, type RequestContext } from "@cheese/service-kit";
import type { CustomerData } from "../domain/customer.ts";
import type { PersonalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteForView } from "./favourite-cheese.ts";

/**
 * A customer as the API returns it. Personal data is opened with the customer's key (or passed in
 * when the caller has just sealed it); the password hash never leaves this function.
 */
export async function customerView(
  deps: Pick<CustomerDeps, "vault" | "cheeses">,
  customer: CustomerData,
  context: RequestContext,
  known?: { personal: PersonalData; favourite: Cheese | { name: string } | undefined },
): Promise<Customer> {
  const personal = known?.personal ?? (await deps.vault.open(customer.customerId, customer.personal));
  if (!personal) throw notFound(`customer ${customer.username} not found`);
  const favouriteCheese = known
    ? known.favourite
    : await favouriteForView(deps.cheeses, customer.favouriteCheese, context);
  return {
    id: customer.customerId,
    username: customer.username,
    ...(personal.firstName !== undefined ? { firstName: personal.firstName } : {}),
    ...(personal.lastName !== undefined ? { lastName: personal.lastName } : {}),
    email: personal.email,
    phone: personal.phone,
    customerStatus: customer.customerStatus,
    ...(favouriteCheese ? { favouriteCheese } : {}),
    createdAt: customer.createdAt,
  };
}
