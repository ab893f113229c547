import { execFileSync } from "node:child_process";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it). */
function chromiumPath(): string | undefined {
  try {
    return execFileSync("sh", ["-c", "command -v chromium"], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const executablePath = chromiumPath();
if (!executablePath) console.warn("docs-browser: skipped, no chromium on PATH (apt-get install -y chromium)");

describe.skipIf(!executablePath)("/docs in a browser", () => {
  let browser: Browser;
  let origin: string;
  let stop: () => Promise<void>;
  beforeAll(async () => {
    const gateway = await testGateway();
    const server = serve({ fetch: gateway.app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise<void>((resolve) => server.once("listening", resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath, headless: true, args: ["--no-sandbox"] });
    stop = async () => {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      gateway.cleanup();
    };
  });
  afterAll(() => stop?.());

  it("renders every operation from the gateway's own files, with no CSP violation and no other origin asked", async () => {
    const page = await browser.newPage();
    const elsewhere: string[] = [];
    const problems: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.protocol !== "data:" && url.origin !== origin) elsewhere.push(request.url());
    });
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text());
    });
    page.on("pageerror", (error) => problems.push(error.message));

    const response = await page.goto(`${origin}/docs`);
    expect(response?.status()).toBe(200);
    await page.locator(".opblock").first().waitFor({ timeout: 30_000 });

    await expect.poll(() => page.locator(".opblock").count()).toBeGreaterThanOrEqual(50);
    await expect(page.locator(".info .title").textContent()).resolves.toContain("Cheese Store");
    for (const id of ["addCheese", "placeOrder", "oauthToken"]) {
      // Swagger UI names each operation block operations-<tag>-<operationId>.
      expect(await page.locator(`.opblock[id$="-${id}"]`).count(), id).toBe(1);
    }
    // Opening an operation shows its example, taken from the document.
    await page.locator('.opblock[id$="-addCheese"] .opblock-summary').click();
    await expect
      .poll(() => page.locator('.opblock[id$="-addCheese"]').textContent())
      .toContain("Comté 18 mois");

    expect(elsewhere).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("cannot be framed by another page", async () => {
    const page = await browser.newPage();
    const blocked: string[] = [];
    page.on("console", (message) => blocked.push(message.text()));
    await page.setContent(`<iframe src="${origin}/docs"></iframe>`);
    await expect
      .poll(() => blocked.join("\n"))
      .toMatch(/frame-ancestors|X-Frame-Options|refused to connect/i);
    await page.close();
  });
});
