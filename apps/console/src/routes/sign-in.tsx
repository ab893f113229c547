/** @jsxImportSource hono/jsx */

import { CheeseApiError } from "@cheese/client";
import type { Hono } from "hono";
import type { ConsoleContext } from "../context.ts";
import { crossSite, unavailable } from "../requests.tsx";
import {
  type ConsoleSession,
  currentSession,
  signIn,
  signInToken,
  signInTokenMatches,
  signOut,
} from "../session.ts";
import type { Notice } from "../views/layout.tsx";
import { SignInPage } from "../views/sign-in.tsx";

/** Signing in with an operator key, and out. */
export function signInRoutes(app: Hono, ctx: ConsoleContext): void {
  const { seeOther, flash, takeNotice, action, sessions, log } = ctx;

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
}
