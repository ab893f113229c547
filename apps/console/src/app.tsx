/** @jsxImportSource hono/jsx */

import { createHash } from "node:crypto";
import { CheeseApiError, type CheeseClient, createCheeseClient, type Schemas, unwrap } from "@cheese/client";
import {
  DeadLetterIdParam,
  DeliveryIdParam,
  DeliveryListQuery,
  type DeliveryStatus,
  FilterPreviewInput,
  fieldErrors,
  ReplayInput,
  ShipmentInput,
  type WebhookEventKind,
  WebhookInput,
  WebhookPatch,
} from "@cheese/contracts";
import { type Context, Hono } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import {
  type ConsoleSession,
  csrfMatches,
  currentSession,
  operatorKeysOf,
  type SessionDeps,
  signIn,
  signInToken,
  signInTokenMatches,
  signOut,
} from "./session.ts";
import { consoleCss } from "./style.ts";
import { DeadLettersPage } from "./views/dead-letters.tsx";
import type { Notice, Section } from "./views/layout.tsx";
import { OrdersPage } from "./views/orders.tsx";
import { ProblemPage } from "./views/problem.tsx";
import { SignInPage } from "./views/sign-in.tsx";
import {
  DeleteWebhookPage,
  DeliveryPage,
  type FieldErrors,
  type ThrottleAuthDraft,
  type WebhookDraft,
  WebhookPage,
  WebhooksPage,
} from "./views/webhooks.tsx";

/**
 * Every console page: nothing but the gateway's own stylesheet and forms posting back here (no
 * script at all), never framed, never cached.
 */
const pageHeaders = {
  "Content-Security-Policy":
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  "X-Frame-Options": "DENY",
  "Cache-Control": "no-store",
  "Referrer-Policy": "same-origin",
};

const NOTICE_COOKIE = "console_notice";
const PAGE_SIZE = 25;

type Form = Record<string, string | File | (string | File)[]>;
type Handler = (c: Context, session: ConsoleSession) => Promise<Response>;
type FormHandler = (c: Context, session: ConsoleSession, form: Form) => Promise<Response>;

export interface ConsoleOptions {
  /** The gateway's address, without `/v2`, the console calls the API at (`http://gateway:8080`). */
  apiUrl: string;
  /** `API_KEYS` as the gateway is configured: who may sign in, and the key each calls the API with. */
  apiKeys: string;
  /** The address browsers reach the console at (its pages redirect there), without `/console`. */
  publicUrl: string;
  now?: () => Date;
  /** The fetch the API client uses (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  log?: { warn(message: string): void };
}

/**
 * `/console`: the operator console (docs/operations.md "Operator console"), an application of the
 * public API: it reads and acts through `@cheese/client` with the signed-in operator's key, so
 * it can do what an operator key may do at the API, and nothing more.
 */
export function createConsoleApp(options: ConsoleOptions): Hono {
  const now = options.now ?? (() => new Date());
  const operatorKeys = operatorKeysOf(options.apiKeys);
  const publicUrl = options.publicUrl.replace(/\/+$/, "");
  const log = options.log ?? { warn: (message: string) => console.warn(message) };
  const sessions: SessionDeps = {
    operatorKeys,
    api: createCheeseClient({
      baseUrl: options.apiUrl,
      retries: 0,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    }),
    now,
    secure: (c) => new URL(c.req.url).protocol === "https:" || publicUrl.startsWith("https:"),
  };
  /** One client per operator key, each calling with that key. */
  const clients = new Map<string, CheeseClient>();
  const api = (session: ConsoleSession): CheeseClient => {
    let client = clients.get(session.operator.id);
    if (!client) {
      client = createCheeseClient({
        baseUrl: options.apiUrl,
        auth: { apiKey: session.operator.key },
        retries: 0,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      clients.set(session.operator.id, client);
    }
    return client;
  };
  const app = new Hono();
  /** After a form or to another page: 303 to the console path at the public URL, never the Host's. */
  const seeOther = (c: Context, path: string) => c.redirect(`${publicUrl}${path}`, 303);

  /**
   * The notice cookie is signed (HMAC-SHA256, Hono's signed cookies) with a secret every gateway
   * replica derives alike from the operator keys it is configured with, so a notice shown on a
   * console page is always one the console wrote, never text someone else planted in the cookie.
   */
  const noticeSecret = createHash("sha256")
    .update("console notices\0")
    .update([...operatorKeys.keys()].sort().join("\0"))
    .digest("base64url");
  /** A notice for the next page this browser opens (after the redirect that follows a form). */
  const flash = (c: Context, notice: Notice) =>
    setSignedCookie(
      c,
      NOTICE_COOKIE,
      Buffer.from(JSON.stringify(notice)).toString("base64url"),
      noticeSecret,
      { path: "/console", httpOnly: true, sameSite: "Strict", secure: sessions.secure(c), maxAge: 60 },
    );
  /** The notice the previous page left (its cookie then deleted), if it is one the console signed. */
  const takeNotice = async (c: Context): Promise<Notice | undefined> => {
    const value = await getSignedCookie(c, noticeSecret, NOTICE_COOKIE);
    if (value === undefined) return undefined;
    deleteCookie(c, NOTICE_COOKIE, { path: "/console" });
    return value === false ? undefined : readNotice(value);
  };
  const notFoundPage = async (c: Context, back: string, text: string) => {
    await flash(c, { kind: "problem", text });
    return seeOther(c, back);
  };
  /** A registration's page: the registration and a page of its deliveries, read together. */
  const webhookView = async (
    c: Context,
    session: ConsoleSession,
    webhookId: number,
    shown: {
      status?: DeliveryStatus[] | undefined;
      type?: WebhookEventKind[] | undefined;
      cursor?: string | undefined;
      notice?: Notice | undefined;
      secret?: { value: string; previousExpiresAt: string | null };
      editDraft?: WebhookDraft | undefined;
      editErrors?: FieldErrors | undefined;
      filterPreview?: Schemas["FilterPreview"] | undefined;
    },
    httpStatus: 200 | 422 = 200,
  ) => {
    const [webhook, deliveries] = await Promise.all([
      unwrap(api(session).GET("/webhooks/{id}", { params: { path: { id: webhookId } } })),
      unwrap(
        api(session).GET("/webhooks/{id}/deliveries", {
          params: {
            path: { id: webhookId },
            query: {
              limit: PAGE_SIZE,
              ...(shown.cursor ? { cursor: shown.cursor } : {}),
              ...(shown.status ? { status: shown.status } : {}),
              ...(shown.type ? { type: shown.type } : {}),
            },
          },
        }),
      ),
    ]);
    return c.html(
      <WebhookPage
        session={view(session)}
        webhook={webhook}
        deliveries={deliveries.items}
        nextCursor={deliveries.nextCursor}
        filter={shown.status?.join(",")}
        typeFilter={shown.type?.join(",")}
        notice={shown.notice}
        secret={shown.secret}
        editDraft={shown.editDraft}
        editErrors={shown.editErrors}
        filterPreview={shown.filterPreview}
      />,
      httpStatus,
    );
  };

  app.get("/console.css", (c) => {
    c.header("Content-Type", "text/css; charset=utf-8");
    c.header("Cache-Control", "public, max-age=3600");
    return c.body(consoleCss);
  });

  app.use(async (c, next) => {
    await next();
    if (c.req.path === "/console/console.css") return;
    for (const [name, value] of Object.entries(pageHeaders)) c.res.headers.set(name, value);
  });

  /** A page for a signed-in operator; anyone else goes to the sign-in form. */
  const page =
    (section: Section, handler: Handler) =>
    async (c: Context): Promise<Response> => {
      let session: ConsoleSession | undefined;
      try {
        session = await currentSession(c, sessions);
        if (!session) return seeOther(c, "/console/sign-in");
        return await handler(c, session);
      } catch (error) {
        if (!(error instanceof CheeseApiError)) throw error;
        const { status, message } = error;
        if (!session) return unavailable(c, error);
        const back =
          section === "orders"
            ? { href: "/console/orders", label: "← Orders" }
            : section === "dead-letters"
              ? { href: "/console/dead-letters", label: "← Event dead letters" }
              : { href: "/console/webhooks", label: "← All registrations" };
        return c.html(
          <ProblemPage
            session={{ ...view(session), section }}
            title={
              status === 404 ? "Not found" : status === 503 ? "Try again shortly" : "Cannot show this page"
            }
            message={message}
            back={back}
          />,
          status as ContentfulStatusCode,
        );
      }
    };

  /**
   * A form's action: a session, then its CSRF token (and no cross-site fetch), then the handler.
   * A service's refusal comes back as a notice on the page the form was on.
   */
  const action =
    (handler: FormHandler, back: (c: Context) => string) =>
    async (c: Context): Promise<Response> => {
      let session: ConsoleSession | undefined;
      try {
        session = await currentSession(c, sessions);
      } catch (error) {
        if (!(error instanceof CheeseApiError)) throw error;
        return unavailable(c, error);
      }
      if (!session) return seeOther(c, "/console/sign-in");
      const form = await c.req.parseBody({ all: true });
      if (crossSite(c) || !csrfMatches(session, form._csrf)) return refusedForm(c, log);
      try {
        return await handler(c, session, form);
      } catch (error) {
        if (!(error instanceof CheeseApiError)) throw error;
        await flash(c, problemOf(error));
        return seeOther(c, back(c));
      }
    };

  app.get("/", (c) => seeOther(c, "/console/webhooks"));

  app.get("/sign-in", async (c) => {
    try {
      if (await currentSession(c, sessions)) return seeOther(c, "/console/webhooks");
    } catch (error) {
      if (!(error instanceof CheeseApiError)) throw error;
      return unavailable(c, error);
    }
    return c.html(<SignInPage token={signInToken(c, sessions)} notice={await takeNotice(c)} />);
  });

  app.post("/sign-in", async (c) => {
    const form = await c.req.parseBody();
    if (crossSite(c) || !signInTokenMatches(c, form._csrf)) {
      const notice: Notice = { kind: "problem", text: "The sign-in form expired: please sign in again." };
      return c.html(<SignInPage token={signInToken(c, sessions)} notice={notice} />, 403);
    }
    const key = typeof form.key === "string" ? form.key.trim() : "";
    let signedIn: ConsoleSession | undefined;
    try {
      signedIn = await signIn(c, sessions, key);
    } catch (error) {
      if (!(error instanceof CheeseApiError)) throw error;
      const notice: Notice = { kind: "problem", text: `Cannot sign in now: ${error.message}` };
      return c.html(<SignInPage token={signInToken(c, sessions)} notice={notice} />, 503);
    }
    if (!signedIn) {
      log.warn("console sign-in refused: not an operator key");
      const notice: Notice = { kind: "problem", text: "That is not an operator API key." };
      return c.html(<SignInPage token={signInToken(c, sessions)} notice={notice} />, 401);
    }
    return seeOther(c, "/console/webhooks");
  });

  app.post(
    "/sign-out",
    action(
      async (c, session) => {
        await signOut(c, sessions, session);
        await flash(c, { kind: "ok", text: "Signed out." });
        return seeOther(c, "/console/sign-in");
      },
      () => "/console/webhooks",
    ),
  );

  // ---- Webhooks: /v2/webhooks ----

  app.get(
    "/webhooks",
    page("webhooks", async (c, session) => {
      const cursor = c.req.query("cursor");
      const list = await unwrap(
        api(session).GET("/webhooks", {
          params: { query: { limit: PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      );
      return c.html(
        <WebhooksPage
          session={view(session)}
          webhooks={list.items}
          nextCursor={list.nextCursor}
          notice={await takeNotice(c)}
        />,
      );
    }),
  );

  app.post(
    "/webhooks",
    action(
      async (c, session, form) => {
        const draft = {
          url: text(form.url),
          description: text(form.description),
          events: texts(form.events),
          ordered: text(form.ordered) === "true",
          ...throttleAuthDraft(form),
        };
        const input = WebhookInput.safeParse({
          url: draft.url,
          events: draft.events,
          description: draft.description || null,
          ordered: draft.ordered,
          ...throttleAuthInput(form, draft),
        });
        const refused = (notice: Notice) => {
          const list = unwrap(api(session).GET("/webhooks", { params: { query: { limit: PAGE_SIZE } } }));
          return list.then((page) =>
            c.html(
              <WebhooksPage
                session={view(session)}
                webhooks={page.items}
                nextCursor={page.nextCursor}
                notice={notice}
                draft={draft}
              />,
              422,
            ),
          );
        };
        if (!input.success) return refused(invalid(input.error.issues));
        try {
          const created = await unwrap(
            api(session).POST("/webhooks", {
              body: {
                url: input.data.url,
                events: input.data.events,
                description: input.data.description ?? null,
                ordered: input.data.ordered ?? false,
                ...(input.data.rateLimit ? { rateLimit: input.data.rateLimit } : {}),
                ...(input.data.auth ? { auth: input.data.auth } : {}),
              },
            }),
          );
          return c.html(
            <WebhookPage
              session={view(session)}
              webhook={created}
              deliveries={[]}
              nextCursor={null}
              filter={undefined}
              notice={{ kind: "ok", text: `Webhook #${created.id} registered.` }}
              secret={{ value: created.secret }}
            />,
            201,
          );
        } catch (error) {
          if (error instanceof CheeseApiError && error.status === 422) return refused(problemOf(error));
          throw error;
        }
      },
      () => "/console/webhooks",
    ),
  );

  app.get(
    "/webhooks/:id",
    page("webhooks", async (c, session) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      // The filter form sends an empty value for "all".
      const given = (name: string) => c.req.query(name) || undefined;
      const query = DeliveryListQuery.safeParse({
        status: given("status"),
        type: given("type"),
        cursor: given("cursor"),
      });
      return webhookView(c, session, webhookId, {
        ...(query.success
          ? { status: query.data.status, type: query.data.type, cursor: query.data.cursor }
          : {}),
        notice: await takeNotice(c),
      });
    }),
  );

  const webhookPage = (c: Context) => `/console/webhooks/${idOf(c) ?? ""}`;
  /** An action on one registration: the RPC with its id, then back to its page with a notice. */
  const onWebhook = (run: (client: CheeseClient, id: number, form: Form) => Promise<Notice>) =>
    action(async (c, session, form) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      await flash(c, await run(api(session), webhookId, form));
      return seeOther(c, webhookPage(c));
    }, webhookPage);

  app.post(
    "/webhooks/:id/pause",
    onWebhook(async (client, id) => {
      await unwrap(client.POST("/webhooks/{id}/pause", { params: { path: { id } } }));
      return { kind: "ok", text: "Paused: deliveries wait until it is resumed." };
    }),
  );

  app.post(
    "/webhooks/:id/resume",
    onWebhook(async (client, id) => {
      await unwrap(client.POST("/webhooks/{id}/resume", { params: { path: { id } } }));
      return { kind: "ok", text: "Active again: what waited goes out, oldest first." };
    }),
  );

  app.post(
    "/webhooks/:id/test",
    onWebhook(async (client, id) => {
      const { deliveryId } = await unwrap(client.POST("/webhooks/{id}/test", { params: { path: { id } } }));
      return { kind: "ok", text: `Test event sent (delivery #${deliveryId}).` };
    }),
  );

  app.post(
    "/webhooks/:id/replay",
    onWebhook(async (client, id, form) => {
      const since = localTime(form.since);
      const until = localTime(form.until);
      const statuses = texts(form.status);
      const input = ReplayInput.safeParse({
        ...(since ? { since } : {}),
        ...(until ? { until } : {}),
        ...(statuses.length > 0 ? { status: statuses } : {}),
      });
      if (!input.success) return invalid(input.error.issues);
      const { replayed } = await unwrap(
        client.POST("/webhooks/{id}/replay", {
          params: { path: { id } },
          body: {
            ...(input.data.since ? { since: input.data.since } : {}),
            ...(input.data.until ? { until: input.data.until } : {}),
            ...(input.data.status ? { status: input.data.status } : {}),
          },
        }),
      );
      return { kind: "ok", text: `${replayed} ${replayed === 1 ? "delivery" : "deliveries"} started again.` };
    }),
  );

  app.post(
    "/webhooks/:id/rotate-secret",
    action(async (c, session) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      const rotated = await unwrap(
        api(session).POST("/webhooks/{id}/rotate-secret", { params: { path: { id: webhookId } } }),
      );
      return webhookView(c, session, webhookId, {
        notice: { kind: "ok", text: "Secret rotated." },
        secret: { value: rotated.secret, previousExpiresAt: rotated.previousSecretExpiresAt },
      });
    }, webhookPage),
  );

  app.post(
    "/webhooks/:id/edit",
    action(async (c, session, form) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      const draft = editDraftOf(form);
      const refused = (notice: Notice, editErrors: FieldErrors) =>
        webhookView(c, session, webhookId, { notice, editDraft: draft, editErrors }, 422);
      const input = WebhookPatch.safeParse({
        url: draft.url,
        events: draft.events,
        description: draft.description || null,
        signatureAlgorithms: draft.signatureAlgorithms,
        filter: draft.filter || null,
        ordered: draft.ordered,
        ...throttleAuthInput(form, draft),
      });
      if (!input.success) {
        return refused(invalid(input.error.issues), byField(fieldErrors(input.error.issues)));
      }
      try {
        await unwrap(
          api(session).PATCH("/webhooks/{id}", {
            params: { path: { id: webhookId } },
            body: {
              ...(input.data.url !== undefined ? { url: input.data.url } : {}),
              ...(input.data.events !== undefined ? { events: input.data.events } : {}),
              description: input.data.description ?? null,
              ...(input.data.signatureAlgorithms !== undefined
                ? { signatureAlgorithms: input.data.signatureAlgorithms }
                : {}),
              filter: input.data.filter ?? null,
              ordered: input.data.ordered ?? false,
              ...(input.data.rateLimit !== undefined ? { rateLimit: input.data.rateLimit } : {}),
              ...(input.data.auth !== undefined ? { auth: input.data.auth } : {}),
            },
          }),
        );
      } catch (error) {
        if (error instanceof CheeseApiError && error.status === 422) {
          return refused(problemOf(error), byField(error.fieldErrors));
        }
        throw error;
      }
      await flash(c, { kind: "ok", text: "Registration saved." });
      return seeOther(c, webhookPage(c));
    }, webhookPage),
  );

  /**
   * The edit form's "Try it": its filter judged on the most recent events of the kinds ticked
   * (`POST /webhooks/filter-preview`); nothing is saved, and the form comes back as it was typed.
   */
  app.post(
    "/webhooks/:id/filter-preview",
    action(async (c, session, form) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      const draft = editDraftOf(form);
      const refused = (message: string) =>
        webhookView(c, session, webhookId, { editDraft: draft, editErrors: { filter: message } }, 422);
      if (!draft.filter) return refused("type a filter to try");
      const input = FilterPreviewInput.safeParse({
        filter: draft.filter,
        ...(draft.events.length > 0 ? { events: draft.events } : {}),
      });
      if (!input.success) {
        const errors = byField(fieldErrors(input.error.issues));
        return refused(errors.filter ?? Object.values(errors).join("; "));
      }
      try {
        const preview = await unwrap(api(session).POST("/webhooks/filter-preview", { body: input.data }));
        return webhookView(c, session, webhookId, { editDraft: draft, filterPreview: preview });
      } catch (error) {
        if (error instanceof CheeseApiError && error.status === 422) {
          const errors = byField(error.fieldErrors);
          return refused(errors.filter ?? error.message);
        }
        throw error;
      }
    }, webhookPage),
  );

  /** Delete asks first: this page holds the one form that deletes. */
  app.get(
    "/webhooks/:id/delete",
    page("webhooks", async (c, session) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      const webhook = await unwrap(
        api(session).GET("/webhooks/{id}", { params: { path: { id: webhookId } } }),
      );
      return c.html(<DeleteWebhookPage session={view(session)} webhook={webhook} />);
    }),
  );

  app.post(
    "/webhooks/:id/delete",
    action(async (c, session, form) => {
      const webhookId = idOf(c);
      if (!webhookId) return notFoundPage(c, "/console/webhooks", "No such webhook.");
      // Only the confirmation page's form says so; anything else is asked again.
      if (text(form.confirm) !== "delete") return seeOther(c, `${webhookPage(c)}/delete`);
      await unwrap(api(session).DELETE("/webhooks/{id}", { params: { path: { id: webhookId } } }));
      await flash(c, {
        kind: "ok",
        text: `Webhook #${webhookId} deleted; its waiting deliveries are cancelled.`,
      });
      return seeOther(c, "/console/webhooks");
    }, webhookPage),
  );

  /** One delivery's path parameters, as the API takes them; anything else is no such delivery. */
  const deliveryOf = (c: Context) => {
    const parsed = DeliveryIdParam.safeParse({
      id: c.req.param("id"),
      deliveryId: c.req.param("deliveryId"),
    });
    return parsed.success && /^\d+$/.test(c.req.param("deliveryId") ?? "") ? parsed.data : undefined;
  };

  app.get(
    "/webhooks/:id/deliveries/:deliveryId",
    page("webhooks", async (c, session) => {
      const ids = deliveryOf(c);
      if (!ids) return notFoundPage(c, webhookPage(c), "No such delivery.");
      const delivery = await unwrap(
        api(session).GET("/webhooks/{id}/deliveries/{deliveryId}", { params: { path: ids } }),
      );
      return c.html(
        <DeliveryPage
          session={view(session)}
          webhookId={ids.id}
          delivery={delivery}
          notice={await takeNotice(c)}
        />,
      );
    }),
  );

  const deliveryPage = (c: Context) => `${webhookPage(c)}/deliveries/${c.req.param("deliveryId") ?? ""}`;
  app.post(
    "/webhooks/:id/deliveries/:deliveryId/resend",
    action(async (c, session) => {
      const ids = deliveryOf(c);
      if (!ids) return notFoundPage(c, webhookPage(c), "No such delivery.");
      const { round } = await unwrap(
        api(session).POST("/webhooks/{id}/deliveries/{deliveryId}/resend", { params: { path: ids } }),
      );
      await flash(c, {
        kind: "ok",
        text: `Resent: round ${round} of delivery #${ids.deliveryId} is on its way.`,
      });
      return seeOther(c, deliveryPage(c));
    }, deliveryPage),
  );

  // ---- Orders: /v2/store/orders and /v2/store/order, the operator as the caller ----

  app.get(
    "/orders",
    page("orders", async (c, session) => {
      const queue = async (status: "approved" | "shipped", cursor: string | undefined) => {
        const list = await unwrap(
          api(session).GET("/store/orders", {
            params: { query: { limit: PAGE_SIZE, status, ...(cursor ? { cursor } : {}) } },
          }),
        );
        return { orders: list.items, total: list.total, nextCursor: list.nextCursor };
      };
      const [toShip, toDeliver] = await Promise.all([
        queue("approved", c.req.query("shipCursor")),
        queue("shipped", c.req.query("deliverCursor")),
      ]);
      return c.html(
        <OrdersPage
          session={view(session)}
          toShip={toShip}
          toDeliver={toDeliver}
          notice={await takeNotice(c)}
        />,
      );
    }),
  );

  app.post(
    "/orders/:id/ship",
    action(
      async (c, session, form) => {
        const orderId = idOf(c);
        if (!orderId) return notFoundPage(c, "/console/orders", "No such order.");
        const input = ShipmentInput.safeParse({
          carrier: text(form.carrier),
          trackingNumber: text(form.trackingNumber),
          estimatedDelivery: localTime(form.estimatedDelivery) ?? "",
        });
        if (!input.success) {
          await flash(c, invalid(input.error.issues));
          return seeOther(c, "/console/orders");
        }
        await unwrap(
          api(session).POST("/store/order/{orderId}/ship", {
            params: { path: { orderId } },
            body: input.data,
          }),
        );
        await flash(c, { kind: "ok", text: `Order #${orderId} shipped with ${input.data.carrier}.` });
        return seeOther(c, "/console/orders");
      },
      () => "/console/orders",
    ),
  );

  app.post(
    "/orders/:id/deliver",
    action(
      async (c, session) => {
        const orderId = idOf(c);
        if (!orderId) return notFoundPage(c, "/console/orders", "No such order.");
        await unwrap(api(session).POST("/store/order/{orderId}/deliver", { params: { path: { orderId } } }));
        await flash(c, { kind: "ok", text: `Order #${orderId} delivered.` });
        return seeOther(c, "/console/orders");
      },
      () => "/console/orders",
    ),
  );

  // ---- Dead letters: /v2/dead-letters ----

  app.get(
    "/dead-letters",
    page("dead-letters", async (c, session) => {
      const cursor = c.req.query("cursor");
      const list = await unwrap(
        api(session).GET("/dead-letters", {
          params: {
            query: {
              limit: PAGE_SIZE,
              ...(cursor && DeadLetterIdParam.safeParse({ id: cursor }).success ? { cursor } : {}),
            },
          },
        }),
      );
      return c.html(
        <DeadLettersPage
          session={view(session)}
          letters={list.items}
          nextCursor={list.nextCursor}
          notice={await takeNotice(c)}
        />,
      );
    }),
  );

  /** An action on one dead letter: the RPC with its id, then back to the list with a notice. */
  const onDeadLetter = (run: (client: CheeseClient, id: string) => Promise<Notice>) =>
    action(
      async (c, session) => {
        const id = DeadLetterIdParam.safeParse({ id: c.req.param("id") });
        if (!id.success) return notFoundPage(c, "/console/dead-letters", "No such dead letter.");
        await flash(c, await run(api(session), id.data.id));
        return seeOther(c, "/console/dead-letters");
      },
      () => "/console/dead-letters",
    );

  app.post(
    "/dead-letters/:id/replay",
    onDeadLetter(async (client, id) => {
      const { consumer } = await unwrap(
        client.POST("/dead-letters/{id}/replay", { params: { path: { id } } }),
      );
      return { kind: "ok", text: `Dead letter #${id} replayed to ${consumer}.` };
    }),
  );

  app.post(
    "/dead-letters/:id/delete",
    onDeadLetter(async (client, id) => {
      await unwrap(client.DELETE("/dead-letters/{id}", { params: { path: { id } } }));
      return { kind: "ok", text: `Dead letter #${id} discarded.` };
    }),
  );

  app.notFound((c) => notFoundPage(c, "/console/webhooks", "No such page."));
  return new Hono().route("/console", app);
}

const view = (session: ConsoleSession) => ({ csrf: session.csrf, operatorId: session.operator.id });

/** A request a browser marks as coming from another site (Fetch Metadata). */
const crossSite = (c: Context) => {
  const site = c.req.header("sec-fetch-site");
  return site !== undefined && site !== "same-origin" && site !== "none";
};

function refusedForm(c: Context, log: { warn(message: string): void }): Response {
  log.warn("console form refused: missing or wrong CSRF token");
  return c.text("This form expired or was not sent from the console: go back, reload and try again.", 403);
}

/** The API could not say whether the session is in force: a problem page, never a pass. */
function unavailable(c: Context, error: CheeseApiError): Response | Promise<Response> {
  return c.html(
    <ProblemPage
      title="Try again shortly"
      message={error.message}
      back={{ href: "/console/sign-in", label: "← Sign in" }}
    />,
    error.status as ContentfulStatusCode,
  );
}

/** Positive integer ids, as the API takes them; anything else is no such thing. */
function idOf(c: Context): number | undefined {
  const id = Number(c.req.param("id"));
  return Number.isSafeInteger(id) && id > 0 && /^\d+$/.test(c.req.param("id") ?? "") ? id : undefined;
}

const text = (value: Form[string] | undefined): string =>
  typeof value === "string" ? value.trim() : Array.isArray(value) ? text(value[0]) : "";
const texts = (value: Form[string] | undefined): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(text).filter(Boolean);

/** The throttle and auth fields as typed, without the secrets (a refused form shows them again). */
function throttleAuthDraft(form: Form): ThrottleAuthDraft {
  return {
    perSecond: text(form.perSecond),
    // A form without the field (one made before it existed) leaves the auth as it is.
    authType: text(form.authType) || "keep",
    tokenUrl: text(form.tokenUrl),
    clientId: text(form.clientId),
    scope: text(form.scope),
  };
}

/**
 * What the throttle and auth fields ask of the API: `rateLimit` (null: none) and `auth` (absent:
 * keep it; null: none). Static headers are typed one `Name: value` a line.
 */
function throttleAuthInput(form: Form, draft: ThrottleAuthDraft): { rateLimit?: unknown; auth?: unknown } {
  // Likewise a form without the throttle field leaves the throttle as it is.
  const throttle =
    form.perSecond === undefined
      ? {}
      : { rateLimit: draft.perSecond === "" ? null : { perSecond: Number(draft.perSecond) } };
  switch (draft.authType) {
    case "keep":
      return throttle;
    case "oauth2_client_credentials":
      return {
        ...throttle,
        auth: {
          type: draft.authType,
          tokenUrl: draft.tokenUrl,
          clientId: draft.clientId,
          clientSecret: text(form.clientSecret),
          ...(draft.scope ? { scope: draft.scope } : {}),
        },
      };
    case "headers": {
      const lines = (typeof form.authHeaders === "string" ? form.authHeaders : "").split(/\r?\n/);
      const headers = lines
        .filter((line) => line.trim() !== "")
        .map((line) => {
          const colon = line.indexOf(":");
          return colon < 0 ? [line.trim(), ""] : [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
        });
      return { ...throttle, auth: { type: "headers", headers: Object.fromEntries(headers) } };
    }
    default:
      return { ...throttle, auth: null };
  }
}

/** A `datetime-local` field (no offset), read as UTC as its label says. */
function localTime(value: Form[string] | undefined): string | undefined {
  const given = text(value);
  if (!given) return undefined;
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(\.\d+)?)?$/.exec(given);
  return match ? `${match[1]}${match[2] ?? ":00"}Z` : given;
}

/** What the edit form sent, as typed (kept on the page when it is refused or tried). */
function editDraftOf(form: Form): WebhookDraft {
  return {
    url: text(form.url),
    description: text(form.description),
    events: texts(form.events),
    signatureAlgorithms: texts(form.signatureAlgorithms),
    filter: text(form.filter),
    ordered: text(form.ordered) === "true",
    ...throttleAuthDraft(form),
  };
}

/** One message per field (the first, when a field has several), for the form to show beside it. */
function byField(errors: readonly { field: string; message: string }[]): FieldErrors {
  const shown: FieldErrors = {};
  for (const { field, message } of errors) shown[field] ??= message;
  return shown;
}

function invalid(issues: Parameters<typeof fieldErrors>[0]): Notice {
  return {
    kind: "problem",
    text: "Some fields need another look:",
    details: fieldErrors(issues).map((e) => `${e.field}: ${e.message}`),
  };
}

function problemOf(error: CheeseApiError): Notice {
  const details = error.fieldErrors.map((e) => `${e.field}: ${e.message}`);
  return { kind: "problem", text: error.message, ...(details.length > 0 ? { details } : {}) };
}

function readNotice(value: string): Notice | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Notice;
    if ((parsed.kind === "ok" || parsed.kind === "problem") && typeof parsed.text === "string") {
      return {
        kind: parsed.kind,
        text: parsed.text,
        ...(Array.isArray(parsed.details) ? { details: parsed.details.map(String) } : {}),
      };
    }
  } catch {
    // not one of ours
  }
  return undefined;
}
