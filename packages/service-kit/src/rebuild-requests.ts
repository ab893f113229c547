import type { Closable, MessageBus } from "@cheese/messaging";
import { z } from "zod";
import type { Logger } from "./logger.ts";
import type { Projection, RebuildOutcome } from "./projection.ts";

/**
 * Rebuilds on request (`pnpm rebuild <service> <projection>`, docs/operations.md, "Rebuilding a
 * projection"): a request on `<service>.rebuild` naming one of the service's projections, served in
 * the service's queue group, so one replica rebuilds it beside the live read models
 * (`Projection.rebuild`) and answers once reads have switched to the new generation.
 */
export const rebuildSubject = (service: string) => `${service}.rebuild`;

export const rebuildRequestSchema = z.object({ projection: z.string().min(1) });

/** What a replica answers: the rebuild's outcome, or why there was none. */
export type RebuildReply =
  | ({ ok: true; projection: string; service: string } & RebuildOutcome)
  | { ok: false; error: string; projections: string[] };

export function serveRebuildRequests(
  bus: MessageBus,
  service: string,
  projections: Record<string, Projection>,
  logger: Logger,
): Closable {
  const names = Object.keys(projections).sort();
  return bus.serve(
    rebuildSubject(service),
    { queue: service },
    async ({ payload }): Promise<RebuildReply> => {
      const request = rebuildRequestSchema.safeParse(payload);
      if (!request.success)
        return { ok: false, error: "the request names no projection", projections: names };
      const { projection: name } = request.data;
      const projection = Object.hasOwn(projections, name) ? projections[name] : undefined;
      if (!projection)
        return {
          ok: false,
          error: `${service} has no projection ${JSON.stringify(name)}`,
          projections: names,
        };
      logger.info({ projection: name }, "projection rebuild requested");
      try {
        return { ok: true, service, projection: name, ...(await projection.rebuild()) };
      } catch (error) {
        logger.error({ err: error, projection: name }, "projection rebuild failed");
        return { ok: false, error: `the rebuild failed: ${(error as Error).message}`, projections: names };
      }
    },
  );
}
