import type { DeadLetter as WireDeadLetter } from "@cheese/contracts";
import type { DeadLetter, DeadLetters } from "@cheese/messaging";
import { notFound } from "@cheese/service-kit";

/**
 * The bus's dead letters (integration events a consumer of any service kept failing), for
 * operators: this service answers for every service, as the dead letters live in the bus, not
 * in any service's store (docs/architecture.md "Dead letters").
 */
export async function listDeadLetters(
  letters: DeadLetters,
  request: { cursor?: string | undefined; limit: number; consumer?: string | undefined },
): Promise<{ items: WireDeadLetter[]; nextCursor: string | null; hasMore: boolean }> {
  const page = await letters.list({
    limit: request.limit,
    ...(request.cursor !== undefined ? { after: request.cursor } : {}),
    ...(request.consumer !== undefined ? { durable: request.consumer } : {}),
  });
  return { items: page.items.map(toWire), nextCursor: page.next ?? null, hasMore: page.next !== undefined };
}

/** Hands it back to the consumer that failed it; 404 if there is no such dead letter (any more). */
export async function replayDeadLetter(
  letters: DeadLetters,
  id: string,
): Promise<{ id: string; consumer: string }> {
  const letter = await letters.get(id);
  if (!letter || !(await letters.replay(id))) throw gone(id);
  return { id, consumer: letter.durable };
}

export async function deleteDeadLetter(letters: DeadLetters, id: string): Promise<{ deleted: boolean }> {
  if (!(await letters.delete(id))) throw gone(id);
  return { deleted: true };
}

const gone = (id: string) => notFound(`dead letter ${id} not found`);

function toWire({ durable, ...letter }: DeadLetter): WireDeadLetter {
  return { ...letter, consumer: durable };
}
