import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * Where every run writes its screenshots (CI prints the folder). `SCREENSHOT_DIR=docs/screenshots`
 * refreshes the committed ones.
 */
export const screenshotDir = resolve(repoRoot, process.env.SCREENSHOT_DIR ?? ".tmp/screenshots");

/** Debian's Chromium, as `.ci/run` installs it; never a downloaded browser. */
export function chromiumPath(): string | undefined {
  try {
    return execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

export async function launchChromium(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/**
 * A page that may reach the gateway under test (and the given local origins) only: any other
 * request is aborted and recorded, so a page that needs the internet shows it and the test says so.
 */
export async function localPage(
  browser: Browser,
  allowedOrigins: string[],
): Promise<{ page: Page; outside: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const outside: string[] = [];
  await context.route("**/*", (route) => {
    const url = route.request().url();
    const allowed = url.startsWith("data:") || allowedOrigins.some((origin) => url.startsWith(`${origin}/`));
    if (allowed) return route.continue();
    outside.push(url);
    return route.abort("blockedbyclient");
  });
  const page = await context.newPage();
  return { page, outside };
}

/** Writes `<name>.png` (the whole page, unless `fullPage: false`) to the screenshot folder. */
export async function screenshot(
  page: Page,
  name: string,
  options: { fullPage?: boolean } = {},
): Promise<void> {
  mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `${name}.png`), fullPage: options.fullPage ?? true });
}
