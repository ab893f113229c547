/** @jsxImportSource hono/jsx */

import { createHash } from "node:crypto";
import { CheeseApiError, type CheeseClient, createCheeseClient } from "@cheese/client";
import { type Context, Hono } from "hono";
import { deleteCookie, getSignedCookie, setSignedCookie } from "hono/cookie";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ConsoleContext, type FormHandler, type Handler, view } from "./context.ts";
import { crossSite, problemOf, refusedForm, unavailable } from "./requests.tsx";
import { deadLetterRoutes } from "./routes/dead-letters.tsx";
import { orderRoutes } from "./routes/orders.tsx";
import { signInRoutes } from "./routes/sign-in.tsx";
import { webhookRoutes } from "./routes/webhooks.tsx";
import {
  type ConsoleSession,
  csrfMatches,
  currentSession,
  operatorKeysOf,
  type SessionDeps,
} from "./session.ts";
import { consoleCss } from "./style.ts";
import type { Notice, Section } from "./views/layout.tsx";
import { ProblemPage } from "./views/problem.tsx";

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

  const ctx: ConsoleContext = { sessions, log, api, seeOther, flash, takeNotice, notFoundPage, page, action };
  signInRoutes(app, ctx);
  webhookRoutes(app, ctx);
  orderRoutes(app, ctx);
  deadLetterRoutes(app, ctx);

  app.notFound((c) => notFoundPage(c, "/console/webhooks", "No such page."));
  return new Hono().route("/console", app);
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
