import { describe, expect, it } from "vitest";
import { testGateway } from "./support.ts";

describe("batch registration's shape", () => {
  it("refuses a batch whose elements carry unknown fields with a quick 422 naming [index].field, asking no service", async () => {
    const { app, bus, cleanup } = await testGateway();
    let asked = 0;
    bus.serve("customer.customer.register_batch", { queue: "customer" }, async () => {
      asked++;
      return { created: [], errors: [] };
    });
    const element: Record<string, unknown> = {
      username: "probe_1",
      email: "probe@example.com",
      password: "correct horse battery",
    };
    for (let i = 0; i < 900; i++) element[`k${i}`] = 1;
    const started = Date.now();
    const response = await app.request("/v2/customer/createMultiple", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ ...element, username: "fine_one", k0: undefined }, ...Array(99).fill(element)]),
    });
    expect(response.status).toBe(422);
    expect(Date.now() - started).toBeLessThan(1_000);
    const body = (await response.json()) as { errors: { field: string; message: string }[] };
    expect(body).toMatchObject({ code: 422, type: "validation_error" });
    // The first 20 are listed, then a count of the rest: 899 in the first element, 900 in each other.
    expect(body.errors).toContainEqual({ field: "[0].k1", message: "unknown field" });
    expect(body.errors.at(-1)).toEqual({
      field: "(body)",
      message: "89979 more errors not listed (89999 in all)",
    });
    expect(body.errors.some((e: { field: string }) => e.field === "[0].k0")).toBe(false);
    expect(asked).toBe(0);
    cleanup();
  });
});
