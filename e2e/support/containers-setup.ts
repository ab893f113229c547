import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { containerImageUnavailableReason, dockerUnavailableReason } from "@cheese/testing";
import type { TestProject } from "vitest/node";
import type { ContainerStack } from "./container-system.ts";
import { type ProductionStack, startProductionStack } from "./production-stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** Set under E2E_STACK=containers: the image every suite's system runs from, and the stores. */
    containerStack: ContainerStack | null;
  }
}

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
let stores: ProductionStack | undefined;

/**
 * Global setup: with E2E_STACK=containers (`pnpm test:e2e:containers`), builds the project's
 * image from the Dockerfile (or takes E2E_IMAGE, already built), finds a NATS image, and starts
 * the production stores whose images can be had, printing for each of the others why it is
 * skipped (the embedded store serves instead). Every suite's system then runs from the image.
 * Without a Docker engine the run fails rather than pretending to have tested it.
 */
export async function setup(project: TestProject): Promise<void> {
  if (process.env.E2E_STACK !== "containers") {
    project.provide("containerStack", null);
    return;
  }
  const reason = await dockerUnavailableReason();
  if (reason) throw new Error(`E2E_STACK=containers needs Docker: ${reason}`);

  let image = process.env.E2E_IMAGE;
  if (!image) {
    image = "cheese-store:e2e";
    console.log(`e2e containers: building ${image} from the Dockerfile`);
    execFileSync("docker", ["build", "--network", "host", "-q", "-t", image, repoRoot], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
  const imageMissing = await containerImageUnavailableReason(image);
  if (imageMissing) throw new Error(`E2E_STACK=containers: ${imageMissing}`);

  // The deployment's NATS line: built on docker-here's nats-server:local, elsewhere the official image.
  const natsImage = execFileSync(join(repoRoot, "deploy/checks/nats-image.sh"), {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  const natsMissing = await containerImageUnavailableReason(natsImage);
  if (natsMissing) throw new Error(`E2E_STACK=containers: ${natsMissing}`);

  stores = await startProductionStack();
  for (const line of stores.skipped) console.warn(`e2e containers: ${line}; the embedded store serves`);
  console.log(`e2e containers: every system runs from ${image}, NATS from ${natsImage}`);
  project.provide("containerStack", { image, natsImage, env: stores.env });
}

export async function teardown(): Promise<void> {
  await stores?.stop();
}
