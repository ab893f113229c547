import type { EventStore } from "@cheese/event-store";
import { createInProcessBroker, type InProcessBroker } from "@cheese/messaging";
import { type Clock, createLogger, type RunningService } from "@cheese/service-kit";
import { tempDir } from "@cheese/testing";
import { expect } from "vitest";
import type { OrderingDeps } from "../src/handlers/deps.ts";
import { start } from "../src/main.ts";

/** The ordering service on the in-process bus with its stores under a temporary DATA_DIR. */
export async function orderingOn(
  broker: InProcessBroker,
  env: Record<string, string> = {},
  dataDir = tempDir("ordering"),
  clock?: Clock,
): Promise<{ service: RunningService<OrderingDeps>; dataDir: { path: string; remove: () => void } }> {
  const service = await start({
    env: { DATA_DIR: dataDir.path, LOG_LEVEL: "silent", ORDER_AUTO_APPROVE_DELAY: "0s", ...env },
    bus: broker.connect("ordering"),
    logger: createLogger("ordering-test", "silent"),
    ...(clock ? { clock } : {}),
  });
  return { service, dataDir };
}

export function newBroker(): InProcessBroker {
  return createInProcessBroker({ logger: createLogger("bus", "silent") });
}

/** The order's outcome (its second event) is caused by its placement and carries its correlation id. */
export async function expectOutcomeOfPlacement(
  store: EventStore,
  orderId: number,
  outcome: string,
): Promise<void> {
  const [placement, decided] = await store.readStream(`order-${orderId}`);
  expect(decided?.type).toBe(outcome);
  expect(placement?.metadata.correlationId).toEqual(expect.any(String));
  expect(decided?.metadata).toMatchObject({
    causationId: placement?.id,
    correlationId: placement?.metadata.correlationId,
  });
}
