import {
  type Customer,
  type CustomerBatchResult,
  type CustomerFields,
  CustomerInput,
  fieldErrors,
  toCustomerFields,
} from "@cheese/contracts";
import { RemoteError } from "@cheese/messaging";
import { contextMetadata, handleCommand, isoNow, type RequestContext } from "@cheese/service-kit";
import { activeCustomer, customerDecider, customerStream } from "../domain/customer.ts";
import { hashPassword } from "../passwords.ts";
import { personalData } from "../personal-data/vault.ts";
import type { CustomerDeps } from "./deps.ts";
import { favouriteFromInput } from "./favourite-cheese.ts";
import { releaseIdentity, reserveIdentity } from "./unique-values.ts";
import { customerView } from "./view.ts";

/**
 * POST /customer: hash the password, resolve the favourite cheese, take a new id, reserve the
 * username and the email (409 when taken), seal the personal data under a new key, register,
 * answer the customer. Anything failing after the reservations undoes them.
 */
export async function registerCustomer(
  deps: CustomerDeps,
  fields: CustomerFields,
  context: RequestContext,
): Promise<Customer> {
  return register(deps, fields, await hashPassword(fields.password), context);
}

/** How long before the caller's deadline a batch stops starting elements, so its answer arrives in time. */
export const BATCH_REPLY_MARGIN_MS = 1_000;
/** Passwords hashed at once (argon2 runs on libuv's 4 threads): more would only queue there. */
const HASHES_AT_ONCE = 4;
export const NOT_REACHED = "not registered: the batch ran out of time; send this element again";

/**
 * POST /customer/createMultiple: each element validated and registered on its own, in order
 * (a duplicate of an earlier element fails with its index); partial success is possible.
 * Passwords are hashed ahead, four at a time, the slow part. The batch answers within the
 * ordinary RPC deadline: an element not started a second before it is an error at its index
 * (`NOT_REACHED`), nothing of it written, and the client sends it again.
 */
export async function registerBatch(
  deps: CustomerDeps,
  elements: readonly unknown[],
  context: RequestContext,
): Promise<CustomerBatchResult> {
  const created: Customer[] = [];
  const errors: CustomerBatchResult["errors"] = [];
  const valid: { index: number; fields: CustomerFields }[] = [];
  elements.forEach((element, index) => {
    const parsed = CustomerInput.safeParse(element);
    if (parsed.success) valid.push({ index, fields: toCustomerFields(parsed.data) });
    else errors.push({ index, message: describe(fieldErrors(parsed.error.issues)) });
  });
  const stopAt = (context.deadline ?? Number.POSITIVE_INFINITY) - BATCH_REPLY_MARGIN_MS;
  const inTime = () => Date.now() < stopAt;
  const hashes = fewAtOnce(valid, HASHES_AT_ONCE, ({ fields }) =>
    inTime() ? hashPassword(fields.password) : undefined,
  );
  for (const [i, { index, fields }] of valid.entries()) {
    const hash = await hashes[i];
    if (hash === undefined || !inTime()) {
      errors.push({ index, message: NOT_REACHED });
      continue;
    }
    try {
      created.push(await register(deps, fields, hash, context));
    } catch (error) {
      // A refusal (409, 422) or an unavailable catalogue (503) fails this element only.
      if (!(error instanceof RemoteError)) throw error;
      errors.push({ index, message: describe(error.body.errors ?? []) || error.body.message });
    }
  }
  return { created, errors: errors.sort((a, b) => a.index - b.index) };
}

/** `work` for each item, in order, at most `atOnce` running; each item's outcome as a promise. */
function fewAtOnce<T, R>(
  items: readonly T[],
  atOnce: number,
  work: (item: T) => Promise<R> | R,
): Promise<R>[] {
  const settle: { resolve: (value: R) => void; reject: (error: unknown) => void }[] = [];
  const outcomes = items.map(
    (_, i) =>
      new Promise<R>((resolve, reject) => {
        settle[i] = { resolve, reject };
      }),
  );
  // A failure is read when its turn in the registration loop comes; never unhandled meanwhile.
  for (const outcome of outcomes) outcome.catch(() => {});
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        settle[i]!.resolve(await work(items[i]!));
      } catch (error) {
        settle[i]!.reject(error);
      }
    }
  };
  for (let n = 0; n < Math.min(atOnce, items.length); n++) void worker();
  return outcomes;
}

async function register(
  deps: CustomerDeps,
  fields: CustomerFields,
  passwordHash: string,
  context: RequestContext,
): Promise<Customer> {
  const metadata = contextMetadata(context);
  const favourite = await favouriteFromInput(deps.cheeses, fields.favouriteCheese, context);
  const customerId = await deps.customerIds.nextId();
  const identity = {
    customerId,
    username: fields.username,
    emailKey: await deps.vault.emailKey(fields.email),
  };
  const personal = personalData(fields, passwordHash);
  try {
    const reservations = reserveIdentity(deps, identity, metadata);
    const { state } = await handleCommand(
      deps.store,
      customerStream(customerId),
      customerDecider,
      {
        type: "Register",
        ...identity,
        personal: await deps.vault.seal(customerId, personal, { newCustomer: true }),
        favouriteCheese: favourite.ref,
        at: isoNow(deps.clock),
      },
      { metadata, alongside: reservations },
    );
    return customerView(deps, activeCustomer(state), context, { personal, favourite: favourite.shown });
  } catch (error) {
    await releaseIdentity(deps, identity, metadata);
    await deps.vault.erase(customerId);
    throw error;
  }
}

const describe = (errors: { field: string; message: string }[]) =>
  errors.map((e) => `${e.field}: ${e.message}`).join("; ");
