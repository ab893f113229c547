import { notFound } from "@cheese/service-kit";
import type { CustomerDeps } from "./deps.ts";

/**
 * Personal data other services keep about a customer (ordering: shipping addresses and notes) is
 * sealed here, under the customer's own key, and opened here: erasing the customer destroys the
 * key, and with it every copy in their event stores (docs/identity.md "Erasure").
 */
export async function sealPersonalData(
  deps: Pick<CustomerDeps, "vault">,
  request: { customerId: number; purpose: string; data: Record<string, unknown> },
): Promise<{ sealed: string }> {
  const sealed = await deps.vault.sealFor(request.customerId, request.purpose, request.data);
  if (sealed === undefined) throw notFound(`customer ${request.customerId} not found`);
  return { sealed };
}

/** Each blob opened, or null when its customer is erased or the blob is not what it claims. */
export async function openPersonalData(
  deps: Pick<CustomerDeps, "vault">,
  request: { purpose: string; items: { customerId: number; sealed: string }[] },
): Promise<{ items: (Record<string, unknown> | null)[] }> {
  const items = await Promise.all(
    request.items.map(async ({ customerId, sealed }) => {
      try {
        const opened = await deps.vault.openFor(customerId, request.purpose, sealed);
        return (opened as Record<string, unknown> | undefined) ?? null;
      } catch {
        return null; // not sealed by this customer's key for this purpose
      }
    }),
  );
  return { items };
}
