import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConsoleApp } from "../apps/console/src/app.tsx";
import { gatewayWith, PUBLIC_URL } from "./support/gateway-in-process.ts";
import { OPERATOR_CLIENT, OPERATOR_KEY } from "./support/system.ts";

const address = { street: "1 Rue du Lait", city: "Meaux", country: "FR" };

/** A browser's cookie jar, enough for one origin and the console's paths. */
class Browser {
  private readonly cookies = new Map<string, string>();

  constructor(
    private readonly app: { request: (path: string, init?: RequestInit) => Response | Promise<Response> },
  ) {}

  async open(path: string, init: RequestInit & { form?: Record<string, string | string[]> } = {}) {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) {
      headers.set("cookie", [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; "));
    }
    let body = init.body;
    if (init.form) {
      const params = new URLSearchParams();
      for (const [name, value] of Object.entries(init.form)) {
        for (const one of Array.isArray(value) ? value : [value]) params.append(name, one);
      }
      body = params.toString();
      headers.set("content-type", "application/x-www-form-urlencoded");
    }
    const response = await this.app.request(path, {
      ...init,
      method: init.method ?? (init.form ? "POST" : "GET"),
      headers,
      ...(body !== undefined ? { body } : {}),
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const [name = "", value = ""] = pair.split("=");
      const expired = attributes.some((a) => /^\s*max-age=0$/i.test(a)) || value === "";
      if (expired) this.cookies.delete(name.trim());
      else this.cookies.set(name.trim(), value);
    }
    return response;
  }

  cookie(name: string): string | undefined {
    return this.cookies.get(name);
  }

  /** The `_csrf` value of the page's forms. */
  static csrfOf(html: string): string {
    const match = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!match) throw new Error("no CSRF field on the page");
    return match[1]!;
  }
}

describe("operator console", () => {
  let system: Awaited<ReturnType<typeof gatewayWith>>;
  let gateway: typeof system.gateway;
  /** The console, calling the gateway's API (in this process) with the signed-in operator's key. */
  let consoleApp: ReturnType<typeof createConsoleApp>;
  /** A cheese on sale, for the orders the tests place. */
  let cheeseId: number;

  const api = (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) =>
    gateway.app.request(`/v2${path}`, {
      method,
      headers: {
        "x-api-key": OPERATOR_KEY,
        ...(body ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });

  /** A browser signed in with the operator key, and the CSRF token of its session. */
  async function signedIn(app = consoleApp): Promise<{ browser: Browser; csrf: string }> {
    const browser = new Browser(app);
    const form = await (await browser.open("/console/sign-in")).text();
    const signed = await browser.open("/console/sign-in", {
      form: { _csrf: Browser.csrfOf(form), key: OPERATOR_KEY },
    });
    expect(signed.status).toBe(303);
    const page = await (await browser.open("/console/webhooks")).text();
    return { browser, csrf: Browser.csrfOf(page) };
  }

  beforeAll(async () => {
    system = await gatewayWith(
      {
        catalogue: {},
        ordering: { ORDER_AUTO_APPROVE_DELAY: "0s" },
        notification: { WEBHOOK_ALLOW_PRIVATE_URLS: "true" },
      },
      "5s",
    );
    gateway = system.gateway;
    consoleApp = createConsoleApp({
      apiUrl: PUBLIC_URL,
      apiKeys: `${OPERATOR_KEY}:pro`,
      publicUrl: PUBLIC_URL,
      fetch: async (request) => gateway.app.fetch(request),
      log: { warn: () => {} },
    });
    cheeseId = await createdByOperatorClient("write:cheeses", "/v2/cheeses", {
      name: "Console Comté",
      pricePerKg: 12,
    });
  });
  afterAll(async () => {
    await system?.stop();
  });

  /** POSTs `body` to `path` as an operator client with `scope`: 201 expected, the new id. */
  async function createdByOperatorClient(
    scope: "write:cheeses" | "write:orders",
    path: string,
    body: unknown,
  ): Promise<number> {
    const { token } = await gateway.tokens.issue(
      { kind: "client", sub: OPERATOR_CLIENT.id, scopes: [scope] },
      600,
    );
    const created = await gateway.app.request(path, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(created.status).toBe(201);
    return ((await created.json()) as { id: number }).id;
  }

  /** An order of the cheese on sale, placed by an operator client: its id. */
  const placeOrder = () =>
    createdByOperatorClient("write:orders", "/v2/store/order", {
      items: [{ cheeseId, quantity: 2 }],
      shippingAddress: address,
    });

  it("sends a visitor without a session to the sign-in form, on pages and on actions", async () => {
    const browser = new Browser(consoleApp);
    for (const path of ["/console", "/console/webhooks", "/console/orders", "/console/webhooks/1"]) {
      const response = await browser.open(path);
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toMatch(
        new RegExp(`^${PUBLIC_URL}/console/(sign-in|webhooks)$`),
      );
    }
    const action = await browser.open("/console/webhooks/1/pause", { form: { _csrf: "x" } });
    expect(action.status).toBe(303);
    expect(action.headers.get("location")).toBe(`${PUBLIC_URL}/console/sign-in`);
  });

  it("redirects to the public URL whatever Host the request names", async () => {
    const response = await consoleApp.request("/console", { headers: { host: "evil.example" } });
    expect(response.status).toBe(303);
    expect(response.headers.get("location")).toBe(`${PUBLIC_URL}/console/webhooks`);
  });

  it("serves pages that load nothing from elsewhere, cannot be framed and are not cached", async () => {
    const response = await new Browser(consoleApp).open("/console/sign-in");
    expect(response.status).toBe(200);
    const csp = response.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/https?:|\*/);
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("cache-control")).toBe("no-store");
    const html = await response.text();
    // Every src or href on the page is the gateway's own.
    for (const [, url] of html.matchAll(/(?:src|href)="([^"]*)"/g)) expect(url).toMatch(/^\//);
    const css = await new Browser(consoleApp).open("/console/console.css");
    expect(css.headers.get("content-type")).toContain("text/css");
  });

  it("signs an operator in with an operator key: a session cookie, HttpOnly and SameSite=Strict, without the key", async () => {
    const browser = new Browser(consoleApp);
    const form = await (await browser.open("/console/sign-in")).text();
    const csrf = Browser.csrfOf(form);

    const forged = await browser.open("/console/sign-in", { form: { _csrf: "forged", key: OPERATOR_KEY } });
    expect(forged.status).toBe(403);
    expect(browser.cookie("console_session")).toBeUndefined();

    const wrong = await browser.open("/console/sign-in", { form: { _csrf: csrf, key: "not-a-key" } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("not an operator API key");

    const signed = await browser.open("/console/sign-in", { form: { _csrf: csrf, key: OPERATOR_KEY } });
    expect(signed.status).toBe(303);
    const setCookie = signed.headers.getSetCookie().find((line) => line.startsWith("console_session="));
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Strict/i);
    expect(setCookie).toMatch(/Path=\/console/i);
    expect(setCookie).not.toContain(OPERATOR_KEY);
    const page = await browser.open("/console/webhooks");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Webhook registrations");
  });

  it("refuses a customer's API key at sign-in", async () => {
    const browser = new Browser(consoleApp);
    const csrf = Browser.csrfOf(await (await browser.open("/console/sign-in")).text());
    const refused = await browser.open("/console/sign-in", {
      form: { _csrf: csrf, key: "cust_0123456789abcdef" },
    });
    expect(refused.status).toBe(401);
    expect(browser.cookie("console_session")).toBeUndefined();
  });

  it("refuses a form without the session's CSRF token, or sent from another site, and changes nothing", async () => {
    const { browser, csrf } = await signedIn();
    const form = { url: "http://127.0.0.1:9/hook", events: ["order.placed"], description: "csrf probe" };
    const before = (await (await api("GET", "/webhooks?limit=100")).json()) as { items: unknown[] };

    expect((await browser.open("/console/webhooks", { form })).status).toBe(403);
    expect((await browser.open("/console/webhooks", { form: { ...form, _csrf: `${csrf}x` } })).status).toBe(
      403,
    );
    const crossSite = await browser.open("/console/webhooks", {
      form: { ...form, _csrf: csrf },
      headers: { "sec-fetch-site": "cross-site" },
    });
    expect(crossSite.status).toBe(403);
    // Another session's token does not fit this one.
    const other = await signedIn();
    expect((await browser.open("/console/webhooks", { form: { ...form, _csrf: other.csrf } })).status).toBe(
      403,
    );

    const after = (await (await api("GET", "/webhooks?limit=100")).json()) as { items: unknown[] };
    expect(after.items).toHaveLength(before.items.length);
  });

  it("registers a webhook through the notification service, shows its secret once, and pauses and resumes it", async () => {
    const { browser, csrf } = await signedIn();
    const created = await browser.open("/console/webhooks", {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/console-hook",
        events: ["order.placed", "order.shipped"],
      },
    });
    expect(created.status).toBe(201);
    const html = await created.text();
    const secret = /data-secret[^>]*>(whsec_[^<]+)</.exec(html)?.[1];
    expect(secret).toBeDefined();
    const id = Number(/Webhook #(\d+) registered/.exec(html)?.[1]);
    const read = (await (await api("GET", `/webhooks/${id}`)).json()) as { url: string; events: string[] };
    expect(read).toMatchObject({
      url: "http://127.0.0.1:9/console-hook",
      events: ["order.placed", "order.shipped"],
    });
    // Never again: not on its page.
    expect(await (await browser.open(`/console/webhooks/${id}`)).text()).not.toContain(secret);

    const paused = await browser.open(`/console/webhooks/${id}/pause`, { form: { _csrf: csrf } });
    expect(paused.status).toBe(303);
    expect(((await (await api("GET", `/webhooks/${id}`)).json()) as { status: string }).status).toBe(
      "paused",
    );
    const page = await (await browser.open(`/console/webhooks/${id}`)).text();
    expect(page).toContain("Paused: deliveries wait");
    expect(page).toContain("paused by an operator");
    expect(page).toContain("Resume");

    await browser.open(`/console/webhooks/${id}/resume`, { form: { _csrf: csrf } });
    expect(((await (await api("GET", `/webhooks/${id}`)).json()) as { status: string }).status).toBe(
      "active",
    );
  });

  it("registers an ordered webhook with the ordered checkbox and turns ordering off in the edit form", async () => {
    const { browser, csrf } = await signedIn();
    const created = await browser.open("/console/webhooks", {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/ordered-hook",
        events: ["order.placed"],
        ordered: "true",
      },
    });
    expect(created.status).toBe(201);
    const id = Number(/Webhook #(\d+) registered/.exec(await created.text())?.[1]);
    const read = async () => (await (await api("GET", `/webhooks/${id}`)).json()) as { ordered: boolean };
    expect((await read()).ordered).toBe(true);
    const page = await (await browser.open(`/console/webhooks/${id}`)).text();
    expect(page).toMatch(/name="ordered" value="true" checked/);

    // An order placed now goes out in its lane: its delivery's row shows the number it carries.
    await placeOrder();
    await expect
      .poll(async () => (await (await browser.open(`/console/webhooks/${id}`)).text()).match(/lane #\d+/g), {
        timeout: 10_000,
      })
      .toEqual(["lane #1"]);

    // The edit form sends what is shown: the box left unticked turns ordering off.
    const edited = await browser.open(`/console/webhooks/${id}/edit`, {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/ordered-hook",
        events: ["order.placed"],
        signatureAlgorithms: ["hmac-sha256"],
      },
    });
    expect(edited.status).toBe(303);
    expect((await read()).ordered).toBe(false);
  });

  it("shows the service's refusal of a registration on the form, keeping what was typed", async () => {
    const { browser, csrf } = await signedIn();
    const refused = await browser.open("/console/webhooks", {
      form: { _csrf: csrf, url: "ftp://example.com/hook", events: ["order.placed"], description: "kept" },
    });
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(html).toMatch(/url: /);
    expect(html).toContain('value="ftp://example.com/hook"');
    expect(html).toContain('value="kept"');
  });

  it("edits a registration's filter: the service's refusal beside the field, Try it without saving, then saved", async () => {
    const { browser, csrf } = await signedIn();
    const created = await (
      await api("POST", "/webhooks", {}, { url: "http://127.0.0.1:9/filtered", events: ["order.placed"] })
    ).json();
    const id = (created as { id: number }).id;
    const form = (filter: string) => ({
      _csrf: csrf,
      url: "http://127.0.0.1:9/filtered",
      events: ["order.placed"],
      signatureAlgorithms: ["hmac-sha256"],
      filter,
    });
    const filterOf = async () =>
      ((await (await api("GET", `/webhooks/${id}`)).json()) as { filter: unknown }).filter;

    const refused = await browser.open(`/console/webhooks/${id}/edit`, { form: form("type > 3") });
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(html).toMatch(/data-field-error="filter">does not type-check on order\.placed/);
    expect(html).toContain("type &gt; 3</textarea>");
    expect(await filterOf()).toBeNull();

    const empty = await browser.open(`/console/webhooks/${id}/filter-preview`, { form: form("") });
    expect(empty.status).toBe(422);
    expect(await empty.text()).toContain('data-field-error="filter">type a filter to try');

    const tried = await browser.open(`/console/webhooks/${id}/filter-preview`, {
      form: form("data.total > 10.0"),
    });
    expect(tried.status).toBe(200);
    expect(await tried.text()).toMatch(/data-filter-preview/);
    expect(await filterOf()).toBeNull();

    const saved = await browser.open(`/console/webhooks/${id}/edit`, { form: form("data.total > 10.0") });
    expect(saved.status).toBe(303);
    expect(await filterOf()).toBe("data.total > 10.0");
  });

  it("registers and edits a throttle and receiver auth from the forms, never showing a secret value", async () => {
    const { browser, csrf } = await signedIn();
    const created = await browser.open("/console/webhooks", {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/console-auth",
        events: ["order.placed"],
        signatureAlgorithms: ["hmac-sha256"],
        perSecond: "4",
        authType: "headers",
        authHeaders: "X-Api-Key: console-static-value\nX-Tenant: cheese-tenant",
      },
    });
    expect(created.status).toBe(201);
    const id = Number(/Webhook #(\d+) registered/.exec(await created.text())?.[1]);
    type Read = { rateLimit: unknown; auth: unknown };
    const read = async () => (await (await api("GET", `/webhooks/${id}`)).json()) as Read;
    expect(await read()).toMatchObject({
      rateLimit: { perSecond: 4 },
      auth: { type: "headers", headers: { "X-Api-Key": "********", "X-Tenant": "********" } },
    });
    const page = await (await browser.open(`/console/webhooks/${id}`)).text();
    expect(page).toContain("4 attempts per second");
    expect(page).toContain("X-Api-Key, X-Tenant");
    expect(page).not.toContain("console-static-value");
    expect(page).not.toContain("cheese-tenant");

    // The edit form keeps the auth unless told otherwise; the throttle is what its field says.
    const kept = await browser.open(`/console/webhooks/${id}/edit`, {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/console-auth",
        events: ["order.placed"],
        signatureAlgorithms: ["hmac-sha256"],
        perSecond: "",
        authType: "keep",
      },
    });
    expect(kept.status).toBe(303);
    expect(await read()).toMatchObject({ rateLimit: null, auth: { type: "headers" } });

    const oauth2 = await browser.open(`/console/webhooks/${id}/edit`, {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/console-auth",
        events: ["order.placed"],
        signatureAlgorithms: ["hmac-sha256"],
        perSecond: "1000",
        authType: "oauth2_client_credentials",
        tokenUrl: "http://127.0.0.1:9/token",
        clientId: "console-client",
        clientSecret: "console-client-secret",
      },
    });
    expect(oauth2.status).toBe(303);
    expect(await read()).toMatchObject({
      rateLimit: { perSecond: 1000 },
      auth: {
        type: "oauth2_client_credentials",
        clientId: "console-client",
        clientSecret: "********",
        scope: null,
      },
    });
    expect(await (await browser.open(`/console/webhooks/${id}`)).text()).not.toContain(
      "console-client-secret",
    );

    const refused = await browser.open(`/console/webhooks/${id}/edit`, {
      form: {
        _csrf: csrf,
        url: "http://127.0.0.1:9/console-auth",
        events: ["order.placed"],
        signatureAlgorithms: ["hmac-sha256"],
        perSecond: "1001",
        authType: "headers",
        authHeaders: "Connection: close",
      },
    });
    expect(refused.status).toBe(422);
    const html = await refused.text();
    expect(html).toContain("rateLimit.perSecond");
    expect(html).toContain("auth.headers.Connection");
    expect(html).toContain('value="1001"');
  });

  it("ships and delivers an order as the operator, through the ordering service", async () => {
    const order = { id: await placeOrder() };
    await expect
      .poll(
        async () =>
          ((await (await api("GET", `/store/order/${order.id}`)).json()) as { status: string }).status,
      )
      .toBe("approved");

    const { browser, csrf } = await signedIn();
    const queue = await (await browser.open("/console/orders")).text();
    expect(queue).toContain(`data-order="${order.id}"`);
    const shipped = await browser.open(`/console/orders/${order.id}/ship`, {
      form: {
        _csrf: csrf,
        carrier: "La Poste",
        trackingNumber: "LP123",
        estimatedDelivery: "2030-01-02T10:30",
      },
    });
    expect(shipped.status).toBe(303);
    const afterShip = (await (await api("GET", `/store/order/${order.id}`)).json()) as { status: string };
    expect(afterShip.status).toBe("shipped");
    expect(await (await browser.open("/console/orders")).text()).toContain(
      `Order #${order.id} shipped with La Poste`,
    );

    await browser.open(`/console/orders/${order.id}/deliver`, { form: { _csrf: csrf } });
    expect(((await (await api("GET", `/store/order/${order.id}`)).json()) as { status: string }).status).toBe(
      "delivered",
    );
    // A second delivery is the decider's 409, shown as a notice.
    await browser.open(`/console/orders/${order.id}/deliver`, { form: { _csrf: csrf } });
    expect(await (await browser.open("/console/orders")).text()).toMatch(/delivered and cannot be/);
  });

  it("lists the events a consumer kept failing, replays one to that consumer, and discards another, with the session's CSRF token", async () => {
    const service = system.broker.connect("customer");
    const durable = `console-${Date.now()}`;
    const subject = "events.customer.customer.registered";
    let broken = true;
    const handled: string[] = [];
    service.consume({
      durable,
      subjects: [subject],
      maxRedeliveryDelayMs: 50,
      deadLetterAfterMs: 200,
      handler: async (event) => {
        if (broken) throw new Error("event store unavailable");
        handled.push(event.id);
      },
    });
    try {
      await service.publish({ id: "console-replayed", subject, payload: { customerId: 1 } });
      await service.publish({ id: "console-discarded", subject, payload: { customerId: 2 } });
      const { browser, csrf } = await signedIn();
      const listed = async () =>
        (await (await browser.open("/console/dead-letters")).text()).match(/data-dead-letter="(\d+)"/g) ?? [];
      await expect.poll(async () => (await listed()).length, { timeout: 5_000 }).toBe(2);
      const page = await (await browser.open("/console/dead-letters")).text();
      expect(page).toContain(durable);
      expect(page).toContain("Error: event store unavailable");
      const [replayed, discarded] = [...page.matchAll(/data-dead-letter="(\d+)"/g)].map((m) => m[1]!);

      // Without the token nothing happens.
      expect((await browser.open(`/console/dead-letters/${replayed}/replay`, { form: {} })).status).toBe(403);
      broken = false;
      const replay = await browser.open(`/console/dead-letters/${replayed}/replay`, {
        form: { _csrf: csrf },
      });
      expect(replay.status).toBe(303);
      const discard = await browser.open(`/console/dead-letters/${discarded}/delete`, {
        form: { _csrf: csrf },
      });
      expect(discard.status).toBe(303);
      await expect.poll(() => handled).toEqual(["console-replayed"]);
      expect(await listed()).toEqual([]);
      // Gone: replaying it again says so on the page.
      await browser.open(`/console/dead-letters/${replayed}/replay`, { form: { _csrf: csrf } });
      expect(await (await browser.open("/console/dead-letters")).text()).toContain(
        `dead letter ${replayed} not found`,
      );
    } finally {
      await service.close();
    }
  });

  it("shows only notices it signed itself: a planted or altered notice cookie is ignored", async () => {
    const planted = (notice: object) => Buffer.from(JSON.stringify(notice)).toString("base64url");
    const lure = { kind: "problem", text: "Your key leaked: call +1 555 0100 at once" };
    const page = (cookie: string) =>
      consoleApp.request("/console/sign-in", { headers: { cookie: `console_notice=${cookie}` } });
    expect(await (await page(planted(lure))).text()).not.toContain("call +1 555 0100");
    // A notice the console signed is shown once; the same signature on other text is not.
    const { browser, csrf } = await signedIn();
    const out = await browser.open("/console/sign-out", { form: { _csrf: csrf } });
    const signed = decodeURIComponent(browser.cookie("console_notice")!);
    expect(out.status).toBe(303);
    const [, signature] = signed.split(".");
    expect(signature).toBeTruthy();
    expect(await (await page(encodeURIComponent(signed))).text()).toContain("Signed out.");
    const altered = encodeURIComponent(`${planted(lure)}.${signature}`);
    expect(await (await page(altered)).text()).not.toContain("call +1 555 0100");
  });

  it("ends the session at sign-out: the same cookie sent again is refused", async () => {
    const { browser, csrf } = await signedIn();
    const session = browser.cookie("console_session")!;
    const out = await browser.open("/console/sign-out", { form: { _csrf: csrf } });
    expect(out.headers.get("location")).toBe(`${PUBLIC_URL}/console/sign-in`);
    const replayed = await consoleApp.request("/console/webhooks", {
      headers: { cookie: `console_session=${session}` },
    });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get("location")).toBe(`${PUBLIC_URL}/console/sign-in`);
  });

  it("ends the session on every replica: a cookie signed out on one console is refused by another, behind another gateway", async () => {
    const otherGateway = await system.anotherGateway();
    const otherConsole = createConsoleApp({
      apiUrl: PUBLIC_URL,
      apiKeys: `${OPERATOR_KEY}:pro`,
      publicUrl: PUBLIC_URL,
      fetch: async (request) => otherGateway.app.fetch(request),
      log: { warn: () => {} },
    });
    const { browser, csrf } = await signedIn();
    const cookie = `console_session=${browser.cookie("console_session")}`;
    const onOther = () => otherConsole.request("/console/webhooks", { headers: { cookie } });
    // One session for both: the other replica shows its pages.
    expect((await onOther()).status).toBe(200);

    await browser.open("/console/sign-out", { form: { _csrf: csrf } });
    await expect
      .poll(async () => (await onOther()).headers.get("location"), { timeout: 5_000 })
      .toBe(`${PUBLIC_URL}/console/sign-in`);
  });

  it("counts its API calls, the session checks included, on the operator key's bucket, never the anonymous plan's", async () => {
    // The operator key on pro (bursts of 100), callers without credentials on free (10): the
    // limit each answer reports names the bucket it was counted on.
    const limited = await system.anotherGateway({
      API_KEYS: `${OPERATOR_KEY}:pro`,
      ANON_PLAN: "free",
      RATE_LIMIT_PLANS: "",
    });
    const limits: string[] = [];
    const counted = createConsoleApp({
      apiUrl: PUBLIC_URL,
      apiKeys: `${OPERATOR_KEY}:pro`,
      publicUrl: PUBLIC_URL,
      fetch: async (request) => {
        const response = await limited.app.fetch(request);
        limits.push(`${new URL(request.url).pathname} ${response.headers.get("ratelimit-limit")}`);
        return response;
      },
      log: { warn: () => {} },
    });
    const { browser } = await signedIn(counted);
    for (const page of ["/console/orders", "/console/dead-letters", "/console/webhooks"]) {
      expect((await browser.open(page)).status).toBe(200);
    }
    expect(limits.length).toBeGreaterThan(8);
    expect(limits.filter((line) => !line.endsWith(" 100"))).toEqual([]);
    expect(limits.filter((line) => line.includes("/v2/operator/session")).length).toBeGreaterThan(3);
  });
});
