/** @jsxImportSource hono/jsx */

import type { CheeseApiError } from "@cheese/client";
import { fieldErrors } from "@cheese/contracts";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Form } from "./context.ts";
import type { Notice } from "./views/layout.tsx";
import { ProblemPage } from "./views/problem.tsx";

/**
 * What the console's routes read of a request (an id in the path, a form's fields, where it came
 * from), how the API's refusal becomes a notice on the page, and the answers when a form or a
 * session cannot be taken.
 */

/** Positive integer ids, as the API takes them; anything else is no such thing. */
export function idOf(c: Context): number | undefined {
  const id = Number(c.req.param("id"));
  return Number.isSafeInteger(id) && id > 0 && /^\d+$/.test(c.req.param("id") ?? "") ? id : undefined;
}

export const text = (value: Form[string] | undefined): string =>
  typeof value === "string" ? value.trim() : Array.isArray(value) ? text(value[0]) : "";
export const texts = (value: Form[string] | undefined): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map(text).filter(Boolean);

/** A `datetime-local` field (no offset), read as UTC as its label says. */
export function localTime(value: Form[string] | undefined): string | undefined {
  const given = text(value);
  if (!given) return undefined;
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(\.\d+)?)?$/.exec(given);
  return match ? `${match[1]}${match[2] ?? ":00"}Z` : given;
}

export function invalid(issues: Parameters<typeof fieldErrors>[0]): Notice {
  return {
    kind: "problem",
    text: "Some fields need another look:",
    details: fieldErrors(issues).map((e) => `${e.field}: ${e.message}`),
  };
}

export function problemOf(error: CheeseApiError): Notice {
  const details = error.fieldErrors.map((e) => `${e.field}: ${e.message}`);
  return { kind: "problem", text: error.message, ...(details.length > 0 ? { details } : {}) };
}

/** A request a browser marks as coming from another site (Fetch Metadata). */
export const crossSite = (c: Context) => {
  const site = c.req.header("sec-fetch-site");
  return site !== undefined && site !== "same-origin" && site !== "none";
};

export function refusedForm(c: Context, log: { warn(message: string): void }): Response {
  log.warn("console form refused: missing or wrong CSRF token");
  return c.text("This form expired or was not sent from the console: go back, reload and try again.", 403);
}

/** The API could not say whether the session is in force: a problem page, never a pass. */
export function unavailable(c: Context, error: CheeseApiError): Response | Promise<Response> {
  return c.html(
    <ProblemPage
      title="Try again shortly"
      message={error.message}
      back={{ href: "/console/sign-in", label: "← Sign in" }}
    />,
    error.status as ContentfulStatusCode,
  );
}
