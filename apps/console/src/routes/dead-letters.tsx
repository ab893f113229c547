/** @jsxImportSource hono/jsx */

import { type CheeseClient, unwrap } from "@cheese/client";
import { DeadLetterIdParam } from "@cheese/contracts";
import type { Hono } from "hono";
import { type ConsoleContext, PAGE_SIZE, view } from "../context.ts";
import { DeadLettersPage } from "../views/dead-letters.tsx";
import type { Notice } from "../views/layout.tsx";

/** The event dead letters (`/v2/dead-letters`): listed, replayed, deleted. */
export function deadLetterRoutes(app: Hono, ctx: ConsoleContext): void {
  const { api, seeOther, flash, takeNotice, notFoundPage, page, action } = ctx;

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
}
