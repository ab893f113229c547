import type { CheeseClient } from "@cheese/client";
import type { Context } from "hono";
import type { ConsoleSession, SessionDeps } from "./session.ts";
import type { Notice, Section } from "./views/layout.tsx";

/** The console's pages list this many items at a time (registrations, deliveries, orders, dead letters). */
export const PAGE_SIZE = 25;

/** A form as Hono parses it (`parseBody({ all: true })`). */
export type Form = Record<string, string | File | (string | File)[]>;
export type Handler = (c: Context, session: ConsoleSession) => Promise<Response>;
export type FormHandler = (c: Context, session: ConsoleSession, form: Form) => Promise<Response>;

/**
 * What every route of the console is given (`createConsoleApp` makes it once): the API client of
 * the signed-in operator, the redirects and notices that follow a form, and the two wrappers every
 * route goes through.
 */
export interface ConsoleContext {
  sessions: SessionDeps;
  log: { warn(message: string): void };
  /** The API client calling with the operator's key (one per key). */
  api(session: ConsoleSession): CheeseClient;
  /** After a form or to another page: 303 to the console path at the public URL, never the Host's. */
  seeOther(c: Context, path: string): Response;
  /** A notice for the next page this browser opens (after the redirect that follows a form). */
  flash(c: Context, notice: Notice): Promise<void>;
  /** The notice the previous page left, if it is one the console signed. */
  takeNotice(c: Context): Promise<Notice | undefined>;
  /** Back to `back`, saying `text` there. */
  notFoundPage(c: Context, back: string, text: string): Promise<Response>;
  /** A page for a signed-in operator; anyone else goes to the sign-in form. */
  page(section: Section, handler: Handler): (c: Context) => Promise<Response>;
  /** A form's action: a session, then its CSRF token, then the handler; a refusal as a notice. */
  action(handler: FormHandler, back: (c: Context) => string): (c: Context) => Promise<Response>;
}

/** What the layout shows of the session: the form token and who is signed in. */
export const view = (session: ConsoleSession) => ({ csrf: session.csrf, operatorId: session.operator.id });
