import { describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

describe("request body size", () => {
  it("refuses a body over 1 MiB with 413 and the error body, without credentials being checked first", async () => {
    const { app, cleanup } = await testGateway();
    const huge = JSON.stringify({ username: "x".repeat(2 * 1024 * 1024), password: "whatever" });
    const response = await app.request("/v2/customer/login", {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": String(huge.length) },
      body: huge,
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 413, type: "payload_too_large" });

    const form = await app.request("/oauth/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `grant_type=client_credentials&pad=${"a".repeat(2 * 1024 * 1024)}`,
    });
    expect(form.status).toBe(413);
    cleanup();
  });

  it("marks every response nosniff", async () => {
    const { app, cleanup } = await testGateway();
    expect((await app.request("/healthz")).headers.get("x-content-type-options")).toBe("nosniff");
    expect((await app.request("/v2/nope")).headers.get("x-content-type-options")).toBe("nosniff");
    cleanup();
  });
});
