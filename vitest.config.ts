import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Tests import workspace packages from their TypeScript source (the `source` export condition);
// processes the tests start run the built JavaScript, as `pnpm start` and the image do.
// Vitest hands the SSR conditions to Node itself (`--conditions`), so `module` stays out of
// them: packages such as OpenTelemetry's export a `module` build Node cannot load.
const conditions = ["source", "node", "development|production"];

// One run covers unit tests, port contract suites and end-to-end tests. Suites that start
// servers do it themselves; container suites print why they skip when no Docker engine exists.
export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions } },
  test: {
    // `pnpm test:e2e:containers [files…]` runs end-to-end suites only, each on the image.
    include:
      process.env.E2E_STACK === "containers"
        ? ["e2e/**/*.test.ts"]
        : [
            "packages/*/test/**/*.test.ts",
            "services/*/test/**/*.test.ts",
            "apps/*/test/**/*.test.ts",
            "bench/test/**/*.test.ts",
            "e2e/**/*.test.ts",
          ],
    pool: "forks",
    // Two test files at once even on two cores (Vitest's own default there is one): an
    // end-to-end file spends most of its time waiting on the system it started. On this
    // project's two-core machines the whole run took 725 s so, against 1,072 s one at a time.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // Waiting for something asynchronous is `expect.poll` (never a fixed sleep); across processes
    // that may take a few seconds.
    expect: { poll: { timeout: 10_000, interval: 50 } },
    reporters: ["default"],
    // First the build (what the e2e suites start is what `pnpm start` runs), then containers.
    globalSetup: ["e2e/support/build-setup.ts", "e2e/support/containers-setup.ts"],
  },
});
