import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { freePort } from "@cheese/testing";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium } from "./support/browser.ts";
import { gatewayWith } from "./support/gateway-in-process.ts";

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );

/**
 * The customer service's sign-in page, through the gateway, under a client on another origin (its
 * redirect URI answers "back at the app").
 */
let origin: string;
let appOrigin: string;
let stop: () => Promise<void>;
const authorizeUrl = () =>
  `${origin}/oauth/authorize?${new URLSearchParams({
    response_type: "code",
    client_id: "web-app",
    redirect_uri: `${appOrigin}/callback`,
    scope: "read:cheeses",
    state: "s1",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
  })}`;

beforeAll(async () => {
  const app = createServer((_, response) => response.end("back at the app"));
  appOrigin = await listen(app);
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  const system = await gatewayWith({}, "3s", {
    clients: [
      { id: "web-app", scopes: ["read:cheeses"], redirectUris: [`${appOrigin}/callback`], plan: "free" },
    ],
    gatewayEnv: { GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: String(port), PUBLIC_URL: origin },
  });
  stop = async () => {
    app.closeAllConnections();
    await new Promise((r) => app.close(r));
    await system.stop();
  };
});
afterAll(() => stop?.());

describe("the sign-in page's Content-Security-Policy", () => {
  it("allows this origin only: no scripts, nothing from elsewhere, no framing, no <base>; the form goes here and on to the client", async () => {
    const response = await fetch(authorizeUrl(), { headers: { accept: "text/html" } });
    expect(response.status).toBe(200);
    const directives = Object.fromEntries(
      response.headers
        .get("content-security-policy")!
        .split(";")
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    expect(directives).toEqual({
      "default-src": ["'none'"],
      "style-src": ["'unsafe-inline'"],
      "form-action": ["'self'", appOrigin],
      "base-uri": ["'none'"],
      "frame-ancestors": ["'none'"],
    });
    expect(response.headers.get("x-frame-options")).toBe("DENY");
  });

  it("answers its problem pages under the same policy", async () => {
    const response = await fetch(`${origin}/oauth/authorize?client_id=nobody`, {
      headers: { accept: "text/html" },
    });
    expect(response.status).toBe(400);
    expect(response.headers.get("content-security-policy")).toMatch(/form-action 'self';/);
    expect(response.headers.get("content-security-policy")).toMatch(/frame-ancestors 'none'/);
  });
});

const executablePath = chromiumPath();
if (!executablePath) console.warn("authorize-page: browser part skipped, no chromium on PATH");

describe.skipIf(!executablePath)("the sign-in page in a browser", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium(executablePath!);
  });
  afterAll(() => browser?.close());

  it("renders with no CSP violation, and its form still sends the browser back to the client", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("console", (message) => problems.push(message.text()));
    page.on("pageerror", (error) => problems.push(error.message));
    expect((await page.goto(authorizeUrl()))?.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toBe("Sign in to Cheese Store");
    // Deny needs no account: the 303 to the client's redirect URI is what form-action must not block.
    await page.locator('button[value="deny"]').click();
    await page.waitForURL(`${appOrigin}/callback**`);
    const back = new URL(page.url());
    expect(back.searchParams.get("error")).toBe("access_denied");
    expect(back.searchParams.get("state")).toBe("s1");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("cannot be framed by another page", async () => {
    const page = await browser.newPage();
    const blocked: string[] = [];
    page.on("console", (message) => blocked.push(message.text()));
    await page.setContent(`<iframe src="${authorizeUrl()}"></iframe>`);
    await expect
      .poll(() => blocked.join("\n"))
      .toMatch(/frame-ancestors|X-Frame-Options|refused to connect/i);
    await page.close();
  });
});
