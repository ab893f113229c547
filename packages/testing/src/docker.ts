import { getContainerRuntimeClient } from "testcontainers";

let cached: Promise<string | undefined> | undefined;

/**
 * Why container-backed suites cannot run here, or undefined when a Docker engine answers.
 * Suites use it to skip with a printed reason instead of silently.
 */
export function dockerUnavailableReason(): Promise<string | undefined> {
  cached ??= getContainerRuntimeClient().then(
    () => undefined,
    (error: unknown) => `no Docker engine reachable (${(error as Error).message.split("\n")[0]})`,
  );
  return cached;
}
