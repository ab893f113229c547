import type { Browser, Page, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium, localPage, screenshot } from "./support/browser.ts";
import { OPERATOR_KEY, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * A first visit as the README tells it, in Chromium, on the default anonymous plan (free: bursts
 * of 10, unlike the other suites' enterprise): the API reference, then the operator console,
 * signing in and walking every page of it. The pages a person opens are not API traffic: no
 * request of the visit may be refused with 429.
 */
const executablePath = chromiumPath();
if (!executablePath) {
  console.warn(
    "first-visit test skipped: no chromium on PATH (apt-get install -y chromium; .ci/run installs it)",
  );
}

describe.skipIf(!executablePath)("a first visit on the default anonymous plan", () => {
  let system: RunningSystem;
  let browser: Browser;

  beforeAll(async () => {
    [system, browser] = await Promise.all([
      startSystem({
        // The defaults: the spec's plan table, anonymous callers on free.
        env: { ANON_PLAN: undefined, RATE_LIMIT_PLANS: undefined, WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
      }),
      launchChromium(executablePath!),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it("opens /docs, then the console, signs in and walks every console page without a 429", async () => {
    const { page, outside } = await localPage(browser, [system.rootUrl]);
    const answers: { url: string; status: number; limit: string | undefined }[] = [];
    page.on("response", (response: Response) =>
      answers.push({
        url: response.url(),
        status: response.status(),
        limit: response.headers()["ratelimit-limit"],
      }),
    );
    const refused = () => answers.filter((a) => a.status === 429).map((a) => a.url);

    await page.goto(`${system.rootUrl}/docs`);
    // Swagger UI has fetched the document and drawn its operations.
    await page.getByText("/cheeses/findByStatus").first().waitFor();
    expect(refused()).toEqual([]);

    await page.goto(`${system.rootUrl}/console`);
    await expect.poll(() => page.url()).toBe(`${system.rootUrl}/console/sign-in`);
    await expectStyled(page);
    await page.getByLabel("Operator API key").fill(OPERATOR_KEY);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForLoadState();
    expect(refused()).toEqual([]);
    await page.getByRole("heading", { name: "Webhook registrations" }).waitFor();
    await expectStyled(page);

    await page.getByLabel("URL").fill("http://127.0.0.1:9/first-visit");
    await page.getByRole("button", { name: "Register" }).click();
    await page.getByRole("heading", { name: /Webhook #\d+/ }).waitFor();
    await page.getByRole("link", { name: "← All registrations" }).click();
    await page.getByRole("heading", { name: "Webhook registrations" }).waitFor();
    await page.getByRole("link", { name: "Orders" }).click();
    await page.getByRole("heading", { name: "Orders waiting for fulfilment" }).waitFor();
    await expectStyled(page);
    await screenshot(page, "first-visit-orders");

    expect(answers.length).toBeGreaterThan(15);
    expect(refused()).toEqual([]);
    // Every console page, signed in or not, counted on the address's page bucket (bursts of 300);
    // the console's own API calls are not the browser's, and the anonymous API plan is untouched.
    const consolePages = answers.filter((a) => new URL(a.url).pathname.startsWith("/console"));
    expect(consolePages.length).toBeGreaterThan(5);
    expect(consolePages.filter((a) => a.limit !== "300")).toEqual([]);
    const api = await fetch(`${system.baseUrl}/cheeses/findByStatus?status=available`);
    expect(api.headers.get("ratelimit-limit")).toBe("10");
    expect(api.headers.get("ratelimit-remaining")).toBe("9");
    expect(outside).toEqual([]);
  });
});

/**
 * The console's stylesheet applied (it sets the body's font; an unstyled page has the UA's serif).
 * A heading can be found before the stylesheet has arrived, so the font is asked until it has.
 */
async function expectStyled(page: Page): Promise<void> {
  const font = () => page.evaluate<string>("getComputedStyle(document.body).fontFamily");
  await expect.poll(font, { timeout: 10_000 }).not.toMatch(/^(?:"?Times|serif)/i);
}
