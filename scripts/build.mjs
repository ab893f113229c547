// `pnpm build`: compiles every workspace project's TypeScript to JavaScript with esbuild.
//
// Each entry point a package.json declares as `{ "source": "./src/x.ts", "default": "./dist/x.js" }`
// becomes one ESM file: the project's own modules are bundled into it, every package import
// (`@cheese/*` and npm) stays an import, so Node resolves workspace packages to their built
// `dist/` and npm packages from the project's own node_modules. Types are checked separately
// (`pnpm typecheck`); see docs/operations.md "Build".
//
// Plain JavaScript on purpose: `pnpm start` runs it with `node`, before anything is built.
// A project whose outputs are newer than every input of its last build is skipped, so a second
// `pnpm start` spends no time here. `--force` rebuilds everything.
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const projectFolders = ["apps", "packages", "services"];
const manifestName = ".build.json";

/** The projects to build and their entry points, read from each package.json's `exports`. */
function projects() {
  const found = [];
  for (const folder of projectFolders) {
    const base = join(root, folder);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base).sort()) {
      const dir = join(base, name);
      const manifest = join(dir, "package.json");
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, "utf8"));
      const entries = Object.entries(pkg.exports ?? {}).flatMap(([subpath, target]) => {
        if (typeof target !== "object" || !target.source || !target.default) return [];
        const out = /^\.\/dist\/(.+)\.js$/.exec(target.default);
        if (!out)
          throw new Error(
            `${relative(root, manifest)}: exports["${subpath}"].default must be ./dist/<name>.js`,
          );
        return [{ in: join(dir, target.source), out: out[1] }];
      });
      if (entries.length > 0) found.push({ name: pkg.name, dir, manifest, entries });
    }
  }
  return found;
}

/** True when dist/ holds a build newer than every file that went into it. */
function upToDate(project) {
  const record = join(project.dir, "dist", manifestName);
  if (!existsSync(record)) return false;
  const { inputs, outputs } = JSON.parse(readFileSync(record, "utf8"));
  const built = Math.min(
    ...outputs.map((o) => (existsSync(join(root, o)) ? statSync(join(root, o)).mtimeMs : 0)),
  );
  const sources = [
    ...inputs,
    relative(root, project.manifest),
    relative(root, fileURLToPath(import.meta.url)),
  ];
  return sources.every((i) => existsSync(join(root, i)) && statSync(join(root, i)).mtimeMs <= built);
}

export async function build({ force = false, quiet = false } = {}) {
  const esbuild = await import("esbuild");
  const started = performance.now();
  const stale = projects().filter((p) => force || !upToDate(p));
  await Promise.all(
    stale.map(async (project) => {
      const outdir = join(project.dir, "dist");
      rmSync(outdir, { recursive: true, force: true });
      const result = await esbuild.build({
        absWorkingDir: root,
        entryPoints: project.entries,
        outdir,
        bundle: true,
        // Every bare import stays external: workspace packages resolve to their own dist/,
        // npm packages (native ones included) load from node_modules as installed.
        packages: "external",
        platform: "node",
        format: "esm",
        target: "node20",
        // Several entries share their modules through chunks, so module state exists once, and
        // a dynamic import() stays lazy: its module and the packages it imports load on demand.
        splitting: true,
        // No `keepNames`: JavaScript names a function from its binding itself, and keepNames made
        // every function bound to a name inside another set that name again (a defineProperty)
        // each time the outer one ran, on every request's path. Only a function the bundle
        // renamed to tell two modules' apart (`upcast2`) shows that name in a stack trace.
        metafile: true,
        logLevel: "warning",
      });
      const inputs = Object.keys(result.metafile.inputs);
      const outputs = Object.keys(result.metafile.outputs);
      writeFileSync(join(outdir, manifestName), JSON.stringify({ inputs, outputs }));
    }),
  );
  if (!quiet) {
    const ms = Math.round(performance.now() - started);
    console.log(
      stale.length ? `built ${stale.map((p) => p.name).join(", ")} in ${ms} ms` : "build up to date",
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  build({ force: process.argv.includes("--force") }).catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
