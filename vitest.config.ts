import { defineConfig } from "vitest/config";

// One run covers unit tests, port contract suites and end-to-end tests. Suites that start
// servers do it themselves; container suites print why they skip when no Docker engine exists.
export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "e2e/**/*.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ["default"],
    globalSetup: ["e2e/support/containers-setup.ts"],
  },
});
