import { createHash, randomBytes } from "node:crypto";
import { createLogger } from "@cheese/service-kit";
import { type Behaviour, envelopeOf, Receiver } from "@cheese/testing/receiver";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumPath, launchChromium, localPage, screenshot, screenshotDir } from "./support/browser.ts";
import { operatorHeaders, registerAndLogin, type TestCustomer } from "./support/credentials.ts";
import { busAs } from "./support/nats-identity.ts";
import { tokenRequest } from "./support/oauth.ts";
import { address, createCheese, http } from "./support/orders.ts";
import { json, OPERATOR_CLIENT, OPERATOR_KEY, type RunningSystem, startSystem } from "./support/system.ts";

/**
 * The pages people use in a browser, driven in Debian's Chromium (playwright-core, headless):
 * the operator console end to end, the OAuth sign-in and consent page, and the API reference.
 * Each page is screenshotted on every run (`screenshotDir`). Pages may reach the gateway and the
 * local webhook receiver only; any other request is blocked and fails the test.
 */
const executablePath = chromiumPath();
if (!executablePath) {
  console.warn(
    "browser tests skipped: no chromium on PATH (apt-get install -y chromium; .ci/run installs it)",
  );
}

const SPA = { id: "browser-spa", path: "/oauth/callback" };

describe.skipIf(!executablePath)("in a browser", () => {
  let system: RunningSystem;
  let receiver: Receiver;
  let browser: Browser;
  let operator: Awaited<ReturnType<typeof operatorHeaders>>;
  let alice: TestCustomer;
  const opened: { page: Page; outside: string[] }[] = [];

  beforeAll(async () => {
    receiver = await Receiver.start();
    [system, browser] = await Promise.all([
      startSystem({
        env: {
          WEBHOOK_ALLOW_PRIVATE_URLS: "true",
          // Six attempts within a second, so failing deliveries reach the dead letters quickly.
          WEBHOOK_RETRY_DELAYS: "0,100ms,100ms,100ms,100ms,100ms",
          WEBHOOK_TIMEOUT: "2s",
          OAUTH_CLIENTS: JSON.stringify([
            {
              ...OPERATOR_CLIENT,
              scopes: ["read:cheeses", "write:cheeses", "read:orders", "write:orders"],
              plan: "enterprise",
            },
            {
              id: SPA.id,
              scopes: ["read:cheeses", "read:orders", "write:orders"],
              redirectUris: [receiver.url(SPA.path)],
              plan: "free",
            },
          ]),
        },
      }),
      launchChromium(executablePath!),
    ]);
    operator = await operatorHeaders(system);
    alice = await registerAndLogin(system);
    console.log(`browser tests: screenshots in ${screenshotDir}`);
  });
  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await receiver?.close();
  });

  /** A fresh browser context (its own cookies) that may reach only the gateway and the receiver. */
  async function newPage(): Promise<Page> {
    const tab = await localPage(browser, [system.rootUrl, receiver.baseUrl]);
    opened.push(tab);
    return tab.page;
  }

  describe("the operator console", () => {
    it("signs in, registers a webhook to a failing receiver, sees its deliveries dead-lettered, replays them once the receiver answers, and sees them delivered", async () => {
      receiver.behave("/console-hook", { status: 500 });
      const page = await newPage();

      await page.goto(`${system.rootUrl}/console`);
      await expect.poll(() => page.url()).toBe(`${system.rootUrl}/console/sign-in`);
      await screenshot(page, "console-sign-in");
      await page.getByLabel("Operator API key").fill("not the key");
      await page.getByRole("button", { name: "Sign in" }).click();
      expect(await page.getByRole("alert").textContent()).toContain("not an operator API key");
      await page.getByLabel("Operator API key").fill(OPERATOR_KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Webhook registrations" }).waitFor();

      await page.getByLabel("URL").fill(receiver.url("/console-hook"));
      await page.getByLabel("Description").fill("fulfilment system");
      // The order kinds are ticked by default; the test event is sent whatever the kinds.
      await page.getByRole("button", { name: "Register" }).click();
      const heading = await page.getByRole("heading", { level: 1 }).textContent();
      const webhookId = Number(/Webhook #(\d+)/.exec(heading ?? "")?.[1]);
      expect(webhookId).toBeGreaterThan(0);
      expect(await page.locator("[data-secret]").textContent()).toMatch(/^whsec_/);
      await screenshot(page, "console-webhook-registered");

      // Three events: a test event from the console, and an order placed and confirmed.
      await page.goto(`${system.rootUrl}/console/webhooks/${webhookId}`);
      await page.getByRole("button", { name: "Send test event" }).click();
      expect(await page.getByRole("status").textContent()).toMatch(/Test event sent \(delivery #\d+\)/);
      const cheese = await createCheese(system, operator.bearer, { name: "Browser Brie" });
      const placed = await http(system).post(
        "/store/order",
        { items: [{ cheeseId: cheese.id, quantity: 1 }], shippingAddress: address },
        operator.bearer,
      );
      expect(placed.status).toBe(201);

      const deliveriesPage = `${system.rootUrl}/console/webhooks/${webhookId}`;
      const rows = async (status: string) => {
        await page.goto(`${deliveriesPage}?status=${status}`);
        return page.locator("tr[data-delivery]").count();
      };
      await expect.poll(() => rows("dead_lettered")).toBe(3);
      const deadLetter = page.locator("tr[data-delivery]").first();
      expect(await deadLetter.textContent()).toContain("dead lettered");
      expect(await deadLetter.textContent()).toContain("HTTP 500");
      expect(await deadLetter.locator("td").nth(3).textContent()).toBe("6");
      expect(receiver.requests("/console-hook")).toHaveLength(18);
      await screenshot(page, "console-dead-letters");

      receiver.behave("/console-hook", { status: 204 });
      await page.getByRole("button", { name: "Replay dead letters" }).click();
      expect(await page.getByRole("status").textContent()).toContain("3 deliveries started again");
      await expect.poll(() => rows("delivered")).toBe(3);
      expect(await rows("dead_lettered")).toBe(0);
      await page.goto(deliveriesPage);
      expect(await page.locator("tr[data-delivery]").first().textContent()).toContain("HTTP 204");
      expect(await page.locator("tr[data-delivery]").first().textContent()).toContain("in replay 1");
      await screenshot(page, "console-delivered");
      const kinds = receiver
        .requests("/console-hook")
        .filter((_, i) => i >= 18)
        .map((r) => envelopeOf(r).type);
      expect(kinds.sort()).toEqual(["order.confirmed", "order.placed", "webhook.test"]);
    });

    it("shows a paused registration's status and reason, and resumes it", async () => {
      const page = await signedIn();
      await page.getByLabel("URL").fill(receiver.url("/paused-hook"));
      await page.getByRole("button", { name: "Register" }).click();
      await page.getByRole("button", { name: "Pause" }).click();
      expect(await page.getByRole("status").textContent()).toContain("Paused");
      const status = page.locator("dd[data-status]");
      expect(await status.textContent()).toContain("paused by an operator");
      await page.getByRole("link", { name: "← All registrations" }).click();
      expect(await page.locator("tbody").textContent()).toContain("paused by an operator");
      await screenshot(page, "console-webhooks");
      await page.goBack();
      await page.reload();
      await page.getByRole("button", { name: "Resume" }).click();
      expect(await page.locator("dd[data-status]").getAttribute("data-status")).toBe("active");
    });

    it("shows a delivery's attempts with request and answer, resends it, filters, edits the registration and deletes it only once confirmed", async () => {
      receiver.behave("/inspect-hook", (_request, count) =>
        count === 1 ? { status: 500, body: "kaput: stock service down" } : { status: 200, body: "thanks" },
      );
      const page = await signedIn();
      await page.getByLabel("URL").fill(receiver.url("/inspect-hook"));
      await page.getByRole("button", { name: "Register" }).click();
      const heading = await page.getByRole("heading", { level: 1 }).textContent();
      const webhookId = Number(/Webhook #(\d+)/.exec(heading ?? "")?.[1]);
      await page.getByRole("button", { name: "Send test event" }).click();
      const deliveryId = Number(
        /delivery #(\d+)/.exec((await page.getByRole("status").textContent()) ?? "")?.[1],
      );
      const deliveryUrl = `${system.rootUrl}/console/webhooks/${webhookId}/deliveries/${deliveryId}`;

      // The delivery's link in the list leads to its attempts.
      await page.getByRole("link", { name: `#${deliveryId}` }).click();
      expect(page.url()).toBe(deliveryUrl);
      const attempts = page.locator("section[data-attempt]");
      await expect
        .poll(async () => {
          await page.reload();
          return attempts.count();
        })
        .toBe(2);
      const [first, second] = [attempts.nth(0), attempts.nth(1)];
      expect(await first.getByRole("heading", { level: 2 }).textContent()).toContain("HTTP 500");
      expect(await first.locator("[data-response-body]").textContent()).toBe("kaput: stock service down");
      const webhookIdHeader = receiver.requests("/inspect-hook")[0]!.headers["webhook-id"] as string;
      expect(await first.locator("[data-headers=request]").textContent()).toContain(webhookIdHeader);
      expect(await first.locator("[data-headers=request]").textContent()).toContain("webhook-signature");
      expect(await second.getByRole("heading", { level: 2 }).textContent()).toContain("HTTP 200");
      expect(await second.locator("[data-response-body]").textContent()).toBe("thanks");
      expect(await page.locator("[data-body]").textContent()).toBe(
        receiver.requests("/inspect-hook")[0]!.body,
      );
      await screenshot(page, "console-delivery");

      await page.getByRole("button", { name: "Resend" }).click();
      expect(await page.getByRole("status").textContent()).toContain(`round 1 of delivery #${deliveryId}`);
      const [, , resent] = await receiver.waitFor("/inspect-hook", 3);
      expect(resent!.headers["webhook-id"]).toBe(webhookIdHeader);
      await expect
        .poll(async () => {
          await page.reload();
          return attempts.count();
        })
        .toBe(3);
      expect(await attempts.nth(2).getByRole("heading", { level: 2 }).textContent()).toBe(
        "Round 1, attempt 1: HTTP 200",
      );

      // Filters by kind and status.
      await page.getByRole("link", { name: `← Webhook #${webhookId}` }).click();
      const rows = page.locator("tr[data-delivery]");
      await page.getByLabel("Kind").selectOption("webhook.test");
      await page.getByLabel("Status").selectOption("delivered");
      await page.getByRole("button", { name: "Filter" }).click();
      expect(await rows.count()).toBe(1);
      await page.getByLabel("Kind").selectOption("order.placed");
      await page.getByRole("button", { name: "Filter" }).click();
      expect(page.url()).toContain("type=order.placed");
      expect(await rows.count()).toBe(0);

      // Edits the registration in place.
      await page.getByLabel("Receiving URL").fill(receiver.url("/inspect-hook-v2"));
      await page.getByRole("checkbox", { name: "order.shipped" }).check();
      await page.getByRole("checkbox", { name: "ed25519" }).check();
      await page.getByRole("button", { name: "Save changes" }).click();
      expect(await page.getByRole("status").textContent()).toContain("Registration saved");
      const saved = await json(await http(system).get(`/webhooks/${webhookId}`, operator.apiKey));
      expect(saved.url).toBe(receiver.url("/inspect-hook-v2"));
      expect(saved.events).toContain("order.shipped");
      expect(saved.signatureAlgorithms).toEqual(["hmac-sha256", "ed25519"]);

      // Delete asks first; cancelling keeps it.
      await page.getByRole("button", { name: "Delete…" }).click();
      await page.getByRole("heading", { name: `Delete webhook #${webhookId}?` }).waitFor();
      await screenshot(page, "console-delete-confirm");
      await page.getByRole("link", { name: "Cancel, keep it" }).click();
      expect((await http(system).get(`/webhooks/${webhookId}`, operator.apiKey)).status).toBe(200);
      await page.getByRole("button", { name: "Delete…" }).click();
      await page.getByRole("button", { name: "Delete this registration" }).click();
      expect(await page.getByRole("status").textContent()).toContain(`Webhook #${webhookId} deleted`);
      expect((await http(system).get(`/webhooks/${webhookId}`, operator.apiKey)).status).toBe(404);
    });

    it("edits a registration's filter: the API's refusal beside the field, tried on recent events (matched of total), then saved", async () => {
      receiver.behave("/filter-hook", { status: 204 });
      const page = await signedIn();
      await page.getByLabel("URL").fill(receiver.url("/filter-hook"));
      await page.getByRole("button", { name: "Register" }).click();
      const webhookId = await shownWebhookId(page);
      // An order of its own, so that the filter has a recorded event to match.
      const cheese = await createCheese(system, operator.bearer, { name: "Filter Fourme" });
      const placed = await http(system).post(
        "/store/order",
        { items: [{ cheeseId: cheese.id, quantity: 1 }], shippingAddress: address },
        operator.bearer,
      );
      const orderId = String((await json(placed)).id);
      const placedEvent = () =>
        receiver
          .requests("/filter-hook")
          .map(envelopeOf)
          .find((event) => event.type === "order.placed" && event.data.order_id === orderId);
      await expect.poll(placedEvent).toBeDefined();
      const savedFilter = async () =>
        (await json(await http(system).get(`/webhooks/${webhookId}`, operator.apiKey))).filter;

      // A filter that names a field no order event has: the API's 422, beside the field, kept as typed.
      const filter = page.getByRole("textbox", { name: /^Filter/ });
      await filter.fill("data.totl > 1.0");
      await page.getByRole("button", { name: "Save changes" }).click();
      const fieldError = page.locator("[data-field-error=filter]");
      expect(await fieldError.textContent()).toContain("refers to a field none of");
      expect(await filter.getAttribute("aria-invalid")).toBe("true");
      expect(await filter.inputValue()).toBe("data.totl > 1.0");
      expect(await savedFilter()).toBeNull();

      // Tried before it is saved: matched of total over the recent events of the kinds ticked.
      const mine = `type == "order.placed" && data.order_id == "${orderId}"`;
      await filter.fill(mine);
      await page.getByRole("button", { name: "Try it" }).click();
      const summary = page.locator("[data-filter-preview] p[data-matched]");
      expect(await summary.getAttribute("data-matched")).toBe("1");
      const total = Number(await summary.getAttribute("data-total"));
      expect(total).toBeGreaterThanOrEqual(2); // order.placed and order.confirmed at least
      expect(await summary.textContent()).toBe(
        `Matches 1 of the ${total} most recent events of these kinds.`,
      );
      const row = page.locator(`[data-filter-preview] tr[data-event="${placedEvent()!.id}"]`);
      expect(await row.getAttribute("data-matched")).toBe("true");
      expect(await page.locator('[data-filter-preview] tr[data-matched="true"]').count()).toBe(1);
      expect(await filter.inputValue()).toBe(mine);
      expect(await savedFilter()).toBeNull();
      await screenshot(page, "console-filter-tried");

      // Enter in a field saves (the form's first button), it does not try again.
      await page.getByLabel("Description").press("Enter");
      expect(await page.getByRole("status").textContent()).toContain("Registration saved");
      expect(await savedFilter()).toBe(mine);
      expect(await page.locator("dd [data-filter]").textContent()).toBe(mine);
      // Emptied, the filter is removed.
      await page.getByRole("textbox", { name: /^Filter/ }).fill("");
      await page.getByRole("button", { name: "Save changes" }).click();
      expect(await page.getByRole("status").textContent()).toContain("Registration saved");
      expect(await savedFilter()).toBeNull();
    });

    it("shows on a delivery's attempts what the receiver asked: a Retry-After, abort, and 410 Gone", async () => {
      receiver.behave(
        "/steer-hook",
        (_request, count): Behaviour =>
          count === 1
            ? { status: 503, headers: { "retry-after": "1" } }
            : { status: 400, headers: { "webhook-delivery": "abort" } },
      );
      const page = await signedIn();
      const sent = await registerAndSendTest(page, receiver.url("/steer-hook"));
      const attempts = page.locator("section[data-attempt]");
      await expect
        .poll(async () => {
          await page.goto(sent.deliveryUrl);
          return page.locator("h1 .badge").textContent();
        })
        .toBe("dead lettered");
      expect(await attempts.count()).toBe(2);
      const [first, second] = receiver.requests("/steer-hook");
      const retryAfter = attempts.nth(0).locator("[data-retry-after]");
      expect(await retryAfter.textContent()).toMatch(
        /^The receiver asked \(Retry-After\) for no attempt before /,
      );
      const notBefore = Date.parse((await retryAfter.getAttribute("data-retry-after"))!);
      expect(notBefore).toBeGreaterThanOrEqual(first!.receivedAt + 1000);
      expect(second!.receivedAt).toBeGreaterThanOrEqual(notBefore);
      expect(await attempts.nth(1).locator("[data-steer]").textContent()).toBe(
        "The receiver answered webhook-delivery: abort: the delivery was dead-lettered without further attempts.",
      );
      await screenshot(page, "console-delivery-steered");
      // In the list too.
      await page.getByRole("link", { name: `← Webhook #${sent.webhookId}` }).click();
      // The click resolves before the registration's page has loaded: wait for its list.
      await expect
        .poll(() => page.locator(`tr[data-delivery="${sent.deliveryId}"] [data-steer=abort]`).count())
        .toBe(1);

      receiver.behave("/gone-hook", { status: 410 });
      const gone = await registerAndSendTest(page, receiver.url("/gone-hook"));
      await expect
        .poll(async () => {
          await page.goto(gone.deliveryUrl);
          return page.locator("[data-steer]").count();
        })
        .toBe(1);
      expect(await page.locator("[data-steer]").getAttribute("data-steer")).toBe("gone");
      expect(await page.locator("[data-steer]").textContent()).toBe(
        "The receiver answered 410 Gone: the registration was disabled.",
      );
      await page.getByRole("link", { name: `← Webhook #${gone.webhookId}` }).click();
      // The registration is disabled before the attempt is recorded, but its page reads another
      // read model, which may follow a moment later.
      const webhookUrl = page.url();
      await expect
        .poll(async () => {
          await page.goto(webhookUrl);
          return page.locator("dd[data-status]").getAttribute("data-status");
        })
        .toBe("disabled");
      expect(await page.locator("dd[data-status]").textContent()).toContain("410 Gone");
    });

    it("shows the network error of an attempt that got no answer", async () => {
      const closed = await Receiver.start();
      const nobody = closed.url("/nobody");
      await closed.close();
      const page = await signedIn();
      const sent = await registerAndSendTest(page, nobody);
      const first = page.locator("section[data-attempt]").first();
      await expect
        .poll(async () => {
          await page.goto(sent.deliveryUrl);
          return first.getAttribute("data-outcome");
        })
        .toBe("failed");
      expect(await first.getByRole("heading", { level: 2 }).textContent()).toBe("Attempt 1: failed");
      expect(await first.textContent()).toContain("No answer: connection refused");
      expect(await first.locator("[data-headers=request]").textContent()).toContain("webhook-signature");
      expect(await first.locator("[data-headers=response]").count()).toBe(0);
    });

    it("ships an approved order with carrier, tracking and estimated delivery, then marks it delivered", async () => {
      const cheese = await createCheese(system, operator.bearer, { name: "Browser Comté" });
      const placed = await http(system).post(
        "/store/order",
        { items: [{ cheeseId: cheese.id, quantity: 3 }], shippingAddress: address, notes: "ring twice" },
        operator.bearer,
      );
      const order = await json(placed);
      const statusOf = async () =>
        (await json(await http(system).get(`/store/order/${order.id}`, operator.apiKey))).status;
      await expect.poll(statusOf).toBe("approved");

      const page = await signedIn();
      await page.getByRole("link", { name: "Orders" }).click();
      const row = page.locator(`tr[data-order="${order.id}"]`);
      expect(await row.textContent()).toContain("3 × Browser Comté");
      await screenshot(page, "console-orders");
      await row.getByLabel("Carrier").fill("Cheese Express");
      await row.getByLabel("Tracking number").fill("CX-42");
      await row.getByLabel("Estimated delivery (UTC)").fill("2030-06-01T12:00");
      await row.getByRole("button", { name: "Ship" }).click();
      expect(await page.getByRole("status").textContent()).toContain(
        `Order #${order.id} shipped with Cheese Express`,
      );
      expect(await statusOf()).toBe("shipped");

      await page
        .locator(`#to-deliver ~ table tr[data-order="${order.id}"]`)
        .getByRole("button", { name: "Mark delivered" })
        .click();
      expect(await page.getByRole("status").textContent()).toContain(`Order #${order.id} delivered`);
      expect(await statusOf()).toBe("delivered");
      expect(await page.locator(`tr[data-order="${order.id}"]`).count()).toBe(0);
    });

    it("lists an event a consumer kept failing under Event dead letters, and replays it to that consumer alone, handled once", async () => {
      // A consumer of the system's bus (ordering's, as far as the bus can tell: it publishes and
      // consumes as ordering) that gives an event up after half a second of failures instead of
      // DEAD_LETTER_AFTER's 24 h.
      const bus = await busAs(system, "ordering", createLogger("e2e-dead-letters", "silent"));
      const consumer = `e2e-browser-${randomBytes(4).toString("hex")}`;
      const subject = "events.ordering.stock.counted";
      const eventId = `evt-${randomBytes(6).toString("hex")}`;
      let broken = true;
      const handled: string[] = [];
      bus.consume({
        durable: consumer,
        subjects: [subject],
        maxRedeliveryDelayMs: 100,
        deadLetterAfterMs: 500,
        handler: async (event) => {
          if (broken) throw new Error("warehouse offline");
          handled.push(event.id);
        },
      });
      try {
        await bus.publish({ id: eventId, subject, payload: { sku: "comte-24", count: 12 } });
        const page = await signedIn();
        await page.getByRole("link", { name: "Event dead letters" }).click();
        const row = page.locator("tr", { hasText: eventId });
        await expect
          .poll(async () => (await page.reload()) && row.count(), { timeout: 15_000, interval: 250 })
          .toBe(1);
        const shown = await row.textContent();
        expect(shown).toContain(consumer);
        expect(shown).toContain(subject);
        expect(shown).toContain("Error: warehouse offline");
        expect(shown).toContain("comte-24");
        await screenshot(page, "console-event-dead-letters");

        broken = false;
        await row.getByRole("button", { name: "Replay" }).click();
        expect(await page.getByRole("status").textContent()).toContain(`replayed to ${consumer}`);
        expect(await page.locator("tr", { hasText: eventId }).count()).toBe(0);
        await expect.poll(() => handled, { timeout: 10_000 }).toEqual([eventId]);
      } finally {
        await bus.close();
      }
    });

    /** The id of the registration whose page is shown. */
    async function shownWebhookId(page: Page): Promise<number> {
      const heading = await page.getByRole("heading", { level: 1 }).textContent();
      const webhookId = Number(/Webhook #(\d+)/.exec(heading ?? "")?.[1]);
      expect(webhookId).toBeGreaterThan(0);
      return webhookId;
    }

    /** Registers a webhook to `url` from the console and sends it a test event. */
    async function registerAndSendTest(page: Page, url: string) {
      await page.goto(`${system.rootUrl}/console/webhooks`);
      await page.getByLabel("URL").fill(url);
      await page.getByRole("button", { name: "Register" }).click();
      const webhookId = await shownWebhookId(page);
      await page.getByRole("button", { name: "Send test event" }).click();
      const deliveryId = Number(
        /delivery #(\d+)/.exec((await page.getByRole("status").textContent()) ?? "")?.[1],
      );
      expect(deliveryId).toBeGreaterThan(0);
      const deliveryUrl = `${system.rootUrl}/console/webhooks/${webhookId}/deliveries/${deliveryId}`;
      return { webhookId, deliveryId, deliveryUrl };
    }

    /** A new browser, signed in, on the registrations page. */
    async function signedIn(): Promise<Page> {
      const page = await newPage();
      await page.goto(`${system.rootUrl}/console/sign-in`);
      await page.getByLabel("Operator API key").fill(OPERATOR_KEY);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("heading", { name: "Webhook registrations" }).waitFor();
      return page;
    }
  });

  describe("the OAuth sign-in and consent page", () => {
    const authorize = (state: string) => {
      const verifier = randomBytes(32).toString("base64url");
      const query = new URLSearchParams({
        response_type: "code",
        client_id: SPA.id,
        redirect_uri: receiver.url(SPA.path),
        scope: "read:orders write:orders",
        state,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      });
      return { url: `${system.rootUrl}/oauth/authorize?${query}`, verifier };
    };

    it("signs a customer in and sends the client a code it exchanges for a token (allow)", async () => {
      const page = await newPage();
      const { url, verifier } = authorize("allow-state");
      await page.goto(url);
      expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Sign in to Cheese Store");
      expect(await page.locator("body").textContent()).toContain(SPA.id);
      expect(await page.locator("body").textContent()).toContain("see your orders");
      await screenshot(page, "oauth-consent");

      await page.getByLabel("Username").fill(alice.username);
      await page.getByLabel("Password").fill("wrong password");
      await page.getByRole("button", { name: "Sign in and allow" }).click();
      expect(await page.getByRole("alert").textContent()).toMatch(/invalid username or password/i);
      await screenshot(page, "oauth-sign-in-refused");

      await page.getByLabel("Username").fill(alice.username);
      await page.getByLabel("Password").fill(alice.password);
      await page.getByRole("button", { name: "Sign in and allow" }).click();
      await page.waitForURL((u) => u.pathname === SPA.path);
      const back = new URL(page.url());
      expect(back.searchParams.get("state")).toBe("allow-state");
      const code = back.searchParams.get("code");
      expect(code).toBeTruthy();

      const exchanged = await tokenRequest(
        system.rootUrl,
        { id: SPA.id, redirectUri: receiver.url(SPA.path) },
        {
          grant_type: "authorization_code",
          code: code!,
          redirect_uri: receiver.url(SPA.path),
          code_verifier: verifier,
        },
      );
      expect(exchanged.status).toBe(200);
      const { access_token } = await json(exchanged);
      const orders = await http(system).get("/store/orders", { authorization: `Bearer ${access_token}` });
      expect(orders.status).toBe(200);
    });

    it("sends the client access_denied when the customer denies", async () => {
      const page = await newPage();
      await page.goto(authorize("deny-state").url);
      await page.getByRole("button", { name: "Deny" }).click();
      await page.waitForURL((u) => u.pathname === SPA.path);
      const back = new URL(page.url());
      expect(back.searchParams.get("error")).toBe("access_denied");
      expect(back.searchParams.get("state")).toBe("deny-state");
      expect(back.searchParams.get("code")).toBeNull();
    });
  });

  describe("the API reference", () => {
    // services/gateway/test/docs-browser.test.ts checks the page in depth (every operation, the
    // examples, no CSP violation, no framing); here: the same page on the system as it runs.
    it("renders /docs from the gateway alone, listing the operations", async () => {
      const tab = await localPage(browser, [system.rootUrl]);
      opened.push(tab);
      await tab.page.goto(`${system.rootUrl}/docs`);
      await expect
        .poll(() => tab.page.getByText("Place an order for cheeses").count(), { timeout: 30_000 })
        .toBeGreaterThan(0);
      expect(
        await tab.page.getByText("Register a receiving URL and the events wanted").count(),
      ).toBeGreaterThan(0);
      await screenshot(tab.page, "docs", { fullPage: false });
      expect(tab.outside).toEqual([]);
    });
  });

  it("let no page reach anything but the gateway and the local receiver", () => {
    expect(opened.length).toBeGreaterThan(0);
    expect(opened.flatMap((tab) => tab.outside)).toEqual([]);
  });
});
