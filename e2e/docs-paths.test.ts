import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** What a walk of the repository skips: installed, built and run-time files, and git's own. */
const notSource = new Set(["node_modules", "dist", ".data", ".git"]);

/**
 * Names the docs write in backticks that are not files of the repository, each made at run time
 * (a reader's copy of a template, a blob's key, a file under `DATA_DIR`).
 */
const madeAtRunTime = new Set([
  "deploy/.env", // `cp deploy/.env.example deploy/.env`
  "notification/schedule-snapshot.json", // a key in the blob store
  "customer/jwt-signing-key.json", // under DATA_DIR
]);

/** The documents whose paths are checked: the README and every page under docs/. */
function documents(): string[] {
  const docs = readdirSync(join(repoRoot, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs.sort()];
}

/** Every file and directory of the repository (relative, `/`-separated), sources only. */
function repositoryPaths(): string[] {
  const paths: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
      if (notSource.has(entry.name)) continue;
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        paths.push(`${path}/`);
        walk(path);
      } else {
        paths.push(path);
      }
    }
  };
  walk("");
  return paths;
}

const fileExtension = /\.(ts|tsx|js|mjs|cjs|json|md|ya?ml|sh|html|css|toml)$/;

/**
 * A backticked name the reader would take for a file of the repository: a path from the root
 * (its first segment is a top-level entry), or a shorter path or file name with a source
 * extension (`routes/cheeses.ts`, `decider.ts`), which must end the path of some file. URLs,
 * URL paths, package names, patterns and placeholders are not file names.
 */
function fileName(code: string, topLevel: Set<string>): string | undefined {
  const text = code.trim().replace(/:\d+(-\d+)?$/, "");
  if (text === "" || /[\s<>{}*$…|=?#"'`(),]/.test(text) || text.includes("..") || text.includes("://")) {
    return undefined;
  }
  if (/^[/@~.-]/.test(text) && !topLevel.has(text.split("/")[0]!)) return undefined; // `.d.ts`, `/v2/…`
  const first = text.split("/")[0]!;
  // What the build writes (`dist/`) is checked up to its package.
  const source = text.replace(/(^|\/)dist\/.*$/, "$1");
  if (source === "") return undefined;
  if (text.includes("/") && topLevel.has(first)) return source;
  if (/^[A-Z][A-Z0-9_]*$/.test(first)) return undefined; // DATA_DIR/…, an environment variable's place
  if (/^[a-z]\.\w+$/.test(text)) return undefined; // Hono's context: `c.json`
  if (fileExtension.test(text)) return text;
  return undefined;
}

/** Where a markdown link within the repository points: the file from the root, and its anchor. */
function linkTarget(document: string, target: string): { path: string; anchor?: string } | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  const [path, anchor] = target.split("#") as [string, string | undefined];
  return {
    path: path === "" ? document : posix.normalize(posix.join(posix.dirname(document), path)),
    ...(anchor === undefined ? {} : { anchor }),
  };
}

/** The anchors GitHub gives a document's headings: `## The image` is `#the-image`. */
function headingAnchors(document: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(join(repoRoot, document), "utf8").split("\n")) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const times = seen.get(slug) ?? 0;
    seen.set(slug, times + 1);
    anchors.add(times === 0 ? slug : `${slug}-${times}`);
  }
  return anchors;
}

/** The file names a document gives, each with the line it is on, and those that do not exist. */
function missingPaths(document: string, paths: string[]): string[] {
  const topLevel = new Set(
    paths.filter((p) => !p.slice(0, -1).includes("/")).map((p) => p.replace(/\/$/, "")),
  );
  const exists = (path: string): boolean => existsSync(join(repoRoot, path));
  const endsSomePath = (name: string): boolean =>
    paths.some((p) => p === name || p.endsWith(`/${name}`) || p === `${name}/` || p.endsWith(`/${name}/`));
  const missing: string[] = [];
  const lines = readFileSync(join(repoRoot, document), "utf8").split("\n");
  let fenced = false;
  lines.forEach((line, index) => {
    const at = `${document}:${index + 1}`;
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (fenced) {
      // In a code block, a command's argument from the root (`node scripts/receive-webhooks.mjs`).
      for (const word of line.split(/[\s'"=]+/)) {
        const name = fileName(word, topLevel);
        if (
          name?.includes("/") &&
          topLevel.has(name.split("/")[0]!) &&
          !exists(name) &&
          !madeAtRunTime.has(name)
        ) {
          missing.push(`${at} ${name}`);
        }
      }
      return;
    }
    for (const [, code] of line.matchAll(/`([^`]+)`/g)) {
      const name = fileName(code!, topLevel);
      if (name === undefined || madeAtRunTime.has(name)) continue;
      const fromRoot = name.includes("/") && topLevel.has(name.split("/")[0]!);
      if (fromRoot ? !exists(name) : !endsSomePath(name)) missing.push(`${at} ${name}`);
    }
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = linkTarget(document, target!);
      if (link === undefined) continue;
      if (!exists(link.path)) missing.push(`${at} ${target} (link)`);
      else if (
        link.anchor !== undefined &&
        link.path.endsWith(".md") &&
        !headingAnchors(link.path).has(link.anchor)
      ) {
        missing.push(`${at} ${target} (no such heading)`);
      }
    }
  });
  return missing;
}

/**
 * The README and docs are reference: every file they name is there to open. A file moved or
 * removed without its mention is named here with the line that mentions it.
 */
describe("file paths in the README and docs", () => {
  const paths = repositoryPaths();
  it.each(documents())("%s names only files that exist", (document) => {
    expect(missingPaths(document, paths)).toEqual([]);
  });

  it("tells file names from URL paths, packages and placeholders, and resolves links and headings as GitHub does", () => {
    const topLevel = new Set(["e2e", "services", "docs"]);
    expect(fileName("e2e/tour.test.ts", topLevel)).toBe("e2e/tour.test.ts");
    expect(fileName("routes/cheeses.ts", topLevel)).toBe("routes/cheeses.ts");
    expect(fileName("main.ts", topLevel)).toBe("main.ts");
    expect(fileName("services/gateway/src/", topLevel)).toBe("services/gateway/src/");
    expect(fileName("services/gateway/dist/main.js", topLevel)).toBe("services/gateway/");
    for (const notAFile of [
      "/v2/cheeses",
      "@cheese/client",
      "DATA_DIR/blobs",
      "services/<name>/",
      "kurrentdb://x",
      ".d.ts",
      "c.json",
    ]) {
      expect(fileName(notAFile, topLevel)).toBeUndefined();
    }
    expect(linkTarget("docs/api.md", "identity.md#tokens")).toEqual({
      path: "docs/identity.md",
      anchor: "tokens",
    });
    expect(linkTarget("docs/api.md", "#errors")).toEqual({ path: "docs/api.md", anchor: "errors" });
    expect(linkTarget("README.md", "docs/api.md")).toEqual({ path: "docs/api.md" });
    expect(headingAnchors("README.md")).toContain("a-five-minute-tour");
    expect(linkTarget("README.md", "https://example.com/x.md")).toBeUndefined();
  });
});
