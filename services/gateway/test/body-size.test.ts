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

  it("refuses JSON nested deeper than 32 levels with 422 naming the body; brackets inside strings do not count", async () => {
    const { app, cleanup } = await testGateway();
    const post = (body: string) =>
      app.request("/v2/customer/createMultiple", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    for (const deep of [
      `${"[".repeat(5000)}${"]".repeat(5000)}`,
      `[${'{"a":'.repeat(40)}1${"}".repeat(40)}]`,
    ]) {
      const response = await post(deep);
      expect(response.status).toBe(422);
      expect(await response.json()).toEqual({
        code: 422,
        type: "validation_error",
        message: "request body failed validation",
        errors: [{ field: "(body)", message: "nested deeper than 32 levels" }],
      });
    }
    // Not nesting: a name full of brackets is the service's to judge (a 200 with its own verdict).
    const brackets = await post(
      JSON.stringify([{ username: "[[[[".repeat(20), password: "{{{{".repeat(20) }]),
    );
    expect(brackets.status).not.toBe(422);
    cleanup();
  });

  it("marks every response nosniff", async () => {
    const { app, cleanup } = await testGateway();
    expect((await app.request("/healthz")).headers.get("x-content-type-options")).toBe("nosniff");
    expect((await app.request("/v2/nope")).headers.get("x-content-type-options")).toBe("nosniff");
    cleanup();
  });
});
