import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

type App = Awaited<ReturnType<typeof testGateway>>["app"];

/** The `src` and `href` values of an HTML page. */
const references = (html: string) => [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((m) => m[1]!);

describe("/docs, the API reference", () => {
  let app: App;
  let cleanup: () => void;
  beforeAll(async () => {
    ({ app, cleanup } = await testGateway());
  });
  afterAll(() => cleanup());

  it("is a page of this origin only, unframeable, under a CSP that allows nothing from elsewhere", async () => {
    const response = await app.request("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = response.headers.get("content-security-policy") ?? "";
    const directives = new Map(
      csp.split(";").map((d) => {
        const [name, ...values] = d.trim().split(/\s+/);
        return [name!, values] as const;
      }),
    );
    expect(directives.get("default-src")).toEqual(["'none'"]);
    expect(directives.get("script-src")).toEqual(["'self'"]);
    expect(directives.get("frame-ancestors")).toEqual(["'none'"]);
    for (const [name, values] of directives) {
      expect(values.join(" "), name).not.toMatch(/https?:|\*|'unsafe-/);
    }
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    const html = await response.text();
    expect(html).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
    expect(references(html).length).toBeGreaterThanOrEqual(4);
    for (const reference of references(html)) expect(reference, reference).toMatch(/^\/(?!\/)/);
  });

  it("serves every script and style the page names, matching its integrity hash", async () => {
    const html = await (await app.request("/docs")).text();
    const tags = [
      ...html.matchAll(/<(?:script|link)[^>]*\s(?:src|href)="([^"]+)"(?:[^>]*integrity="([^"]+)")?/g),
    ];
    const withIntegrity = tags.filter((t) => t[2]);
    expect(withIntegrity.map((t) => t[1])).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/swagger-ui\.css$/),
        expect.stringMatching(/swagger-ui-bundle\.js$/),
        expect.stringMatching(/init\.js$/),
      ]),
    );
    for (const [, url, integrity] of tags) {
      const asset = await app.request(url!);
      expect(asset.status, url).toBe(200);
      expect(asset.headers.get("content-type"), url).toMatch(/javascript|css|image\/png/);
      const body = Buffer.from(await asset.arrayBuffer());
      expect(body.length, url).toBeGreaterThan(100);
      if (integrity) {
        expect(integrity, url).toBe(`sha384-${createHash("sha384").update(body).digest("base64")}`);
      }
    }
  });

  it("starts Swagger UI on the served document, with no call to the online validator", async () => {
    const html = await (await app.request("/docs")).text();
    const init = references(html).find((r) => r.endsWith("/init.js"))!;
    const script = await (await app.request(init)).text();
    expect(script).toContain('url: "/v2/openapi.json"');
    expect(script).toContain("validatorUrl: null");
  });

  it("answers 404 for a file it does not serve", async () => {
    const html = await (await app.request("/docs")).text();
    const base = references(html)
      .find((r) => r.endsWith("/init.js"))!
      .replace(/init\.js$/, "");
    expect((await app.request(`${base}package.json`)).status).toBe(404);
    expect((await app.request(`${base}..%2Fpackage.json`)).status).toBe(404);
  });
});
