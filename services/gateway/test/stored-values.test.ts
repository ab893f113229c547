import { describe, expect, it } from "vitest";
import { OPERATOR_CLIENT, OPERATOR_KEY, testGateway } from "./support.ts";

/**
 * What the API stores for a caller and shows later (security probe L6 and the names finding):
 * refused with 422 naming the field by the gateway's body schemas, before any service is asked.
 */
describe("values stored for later readers", async () => {
  const { app, tokens, cleanup } = await testGateway();
  const { token } = await tokens.issue(
    { kind: "client", sub: OPERATOR_CLIENT.id, scopes: ["read:cheeses", "write:cheeses"] },
    3600,
  );
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    app.request(`/v2${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const refusedFields = async (response: Response) => {
    expect(response.status).toBe(422);
    const body = (await response.json()) as { errors: { field: string }[] };
    return body.errors.map((e) => e.field);
  };

  const hostile = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    'https://example.com/"><script>alert(1)</script>',
    "https://example.com/<svg onload=alert(1)>",
    "https://example.com/a b",
    "//example.com/photo.jpg",
    "photo.jpg",
    "ftp://example.com/photo.jpg",
    "https://exämple.com/photo.jpg",
  ];

  it.each(hostile)("refuses the photo URL %j with 422 naming photoUrls[1]", async (url) => {
    const fields = await refusedFields(
      await post(
        "/cheeses",
        { name: "Safe Brie", photoUrls: ["https://example.com/ok.jpg", url] },
        { authorization: `Bearer ${token}` },
      ),
    );
    expect(fields).toEqual(["photoUrls[1]"]);
  });

  it.each(hostile)("refuses the webhook URL %j with 422 naming url", async (url) => {
    const fields = await refusedFields(
      await post("/webhooks", { url, events: ["order.placed"] }, { "x-api-key": OPERATOR_KEY }),
    );
    expect(fields).toEqual(["url"]);
  });

  it.each([
    ["NUL", "Brie\u0000de Meaux"],
    ["a zero-width space", "Brie\u200bde Meaux"],
    ["a zero-width joiner", "Brie\u200d"],
    ["a right-to-left override", "\u202eeirB"],
    ["a byte order mark", "Brie\ufeffde Meaux"],
    ["a lone high surrogate", "Brie \ud83e"],
    ["a lone low surrogate", "Brie \udd80"],
    ["a line feed", "Brie\nde Meaux"],
  ])(
    "refuses a cheese name with %s: 422 naming name in a body, 400 naming it in the query",
    async (_, name) => {
      const bearer = { authorization: `Bearer ${token}` };
      expect(await refusedFields(await post("/cheeses", { name }, bearer))).toEqual(["name"]);
      // A lone surrogate has no UTF-8, so no percent-encoding: it reaches the API only in JSON.
      if (/\p{Cs}/u.test(name)) return;
      const query = await app.request(`/v2/cheeses/7?name=${encodeURIComponent(name)}`, {
        method: "POST",
        headers: bearer,
      });
      expect(query.status).toBe(400);
      expect(((await query.json()) as { message: string }).message).toMatch(
        /^invalid query parameter: name: /,
      );
    },
  );

  it("takes names with accents, emoji and other scripts, and http(s) URLs with escapes", async () => {
    // No catalogue answers here: past validation the request reaches the bus (503), not a 422.
    for (const name of ["Comté 18 mois", "Ser 🧀 Żółty", "チーズ", "Brie de Meaux"]) {
      expect((await post("/cheeses", { name }, { authorization: `Bearer ${token}` })).status).toBe(503);
    }
    const photoUrls = [
      "https://example.com/a%20b.jpg?size=2&x=%3Cy%3E#top",
      "http://127.0.0.1:8080/v2/images/a.png",
    ];
    expect(
      (await post("/cheeses", { name: "Brie", photoUrls }, { authorization: `Bearer ${token}` })).status,
    ).toBe(503);
  });

  it("cleans up", () => cleanup());
});
