import { availableParallelism } from "node:os";
import { defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

// Tests import workspace packages from their TypeScript source (the `source` export condition);
// processes the tests start run the built JavaScript, as `pnpm start` and the image do.
// Vitest hands the SSR conditions to Node itself (`--conditions`), so `module` stays out of
// them: packages such as OpenTelemetry's export a `module` build Node cannot load.
const conditions = ["source", "node", "development|production"];

/** A few unit files read or start the built code too (the OpenAPI document, the launcher). */
const build = "e2e/support/build-setup.ts";

/** Unit tests, port contract suites, and the bench's own tests. */
const unit: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: "unit",
    include: [
      "packages/*/test/**/*.test.ts",
      "services/*/test/**/*.test.ts",
      "apps/*/test/**/*.test.ts",
      "bench/test/**/*.test.ts",
    ],
    // The files of a worker thread share its module graph and global scope instead of loading
    // everything again each: on two cores these files took ~100 s so, ~250 s each in a fresh
    // process. So a unit file leaves nothing behind it (a timer, an env variable, a patched
    // global); the setup file guards the one global a library sets on import.
    pool: "threads",
    setupFiles: ["vitest.unit-setup.ts"],
    globalSetup: [build],
    sequence: { groupOrder: 0 },
  },
};

// One run covers unit tests, port contract suites and end-to-end tests, as two projects run one
// after the other. Suites that start servers do it themselves; container suites print why they
// skip when no Docker engine exists.
export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    // Vitest 3 takes isolation per pool, not per project: hence a pool each.
    poolOptions: { threads: { isolate: false }, forks: { isolate: true } },
    // Two test files at once even on two cores (Vitest's own default there is one): an
    // end-to-end file spends most of its time waiting on the system it started.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // Waiting for something asynchronous is `expect.poll` (never a fixed sleep); across processes
    // that may take a few seconds.
    expect: { poll: { timeout: 10_000, interval: 50 } },
    reporters: ["default"],
    projects: [
      // `pnpm test:e2e:containers [files…]` runs end-to-end suites only, each on the image.
      ...(process.env.E2E_STACK === "containers" ? [] : [unit]),
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["e2e/**/*.test.ts"],
          // A process per file: these files set env variables, start systems, kill processes.
          pool: "forks",
          // First the build (what they start is what `pnpm start` runs), then containers.
          globalSetup: [build, "e2e/support/containers-setup.ts"],
          // After the unit files: the two pools would otherwise each run maxWorkers files at once.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
