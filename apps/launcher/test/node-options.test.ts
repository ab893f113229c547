import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { launcherNodeOptions } from "../src/node-options.ts";

it("pnpm start runs the launcher with its own V8 options", () => {
  const manifest = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8"));
  expect(manifest.scripts.start).toContain(`exec node ${launcherNodeOptions} apps/launcher/dist/cli.js`);
});
