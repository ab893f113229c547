// argon2's prebuilt binary crashes on some Node 20 builds, so we always compile it from source.
// node-gyp-build loads build/Release before prebuilds/, so a compiled binary wins once it exists.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(new URL("../services/customer/package.json", import.meta.url));
const argon2Dir = dirname(require.resolve("argon2/package.json"));
const binary = join(argon2Dir, "build", "Release", "argon2.node");
if (existsSync(binary)) process.exit(0);

const pnpmDir = process.env.npm_execpath ? dirname(dirname(process.env.npm_execpath)) : "";
const candidates = [
  join(pnpmDir, "dist", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  join(pnpmDir, "node_modules", "node-gyp", "bin", "node-gyp.js"),
];
const nodeGyp = candidates.find((c) => existsSync(c));
console.log(`compiling argon2 from source in ${argon2Dir}`);
if (nodeGyp) execFileSync(process.execPath, [nodeGyp, "rebuild"], { cwd: argon2Dir, stdio: "inherit" });
else execFileSync("npx", ["--yes", "node-gyp@11", "rebuild"], { cwd: argon2Dir, stdio: "inherit" });
