import { dockerUnavailableReason } from "@cheese/testing";
import type { TestProject } from "vitest/node";
import { type ProductionStack, startProductionStack } from "./production-stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Set under E2E_STACK=containers: variables pointing the system at the container stack. */
    productionStackEnv: Record<string, string> | null;
  }
}

let stack: ProductionStack | undefined;

/**
 * Global setup: with E2E_STACK=containers, starts the production stack once for the whole run
 * and hands its variables to every e2e suite (startSystem passes them on). Without a Docker
 * engine it says so in one line and the run fails rather than pretending to have tested it.
 */
export async function setup(project: TestProject): Promise<void> {
  if (process.env.E2E_STACK !== "containers") {
    project.provide("productionStackEnv", null);
    return;
  }
  const reason = await dockerUnavailableReason();
  if (reason) throw new Error(`E2E_STACK=containers needs Docker: ${reason}`);
  stack = await startProductionStack();
  project.provide("productionStackEnv", stack.env);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
