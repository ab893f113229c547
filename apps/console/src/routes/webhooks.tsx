/** @jsxImportSource hono/jsx */

import { CheeseApiError, type CheeseClient, type Schemas, unwrap } from "@cheese/client";
import {
  DeliveryIdParam,
  DeliveryListQuery,
  type DeliveryStatus,
  FilterPreviewInput,
  fieldErrors,
  ReplayInput,
  type WebhookEventKind,
  WebhookInput,
  WebhookPatch,
} from "@cheese/contracts";
import type { Context, Hono } from "hono";
import { type ConsoleContext, type Form, PAGE_SIZE, view } from "../context.ts";
import { idOf, invalid, localTime, problemOf, text, texts } from "../requests.tsx";
import type { ConsoleSession } from "../session.ts";
import { DeliveryPage } from "../views/deliveries.tsx";
import type { Notice } from "../views/layout.tsx";
import {
  DeleteWebhookPage,
  type FieldErrors,
  type ThrottleAuthDraft,
  type WebhookDraft,
  WebhookPage,
  WebhooksPage,
} from "../views/webhooks.tsx";

/**
 * The webhook registrations (`/v2/webhooks`): the list, one registration with its deliveries, and
 * what an operator may do to them.
 */
export function webhookRoutes(app: Hono, ctx: ConsoleContext): void {
  const { api, seeOther, flash, takeNotice, notFoundPage, page, action } = ctx;

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
}

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
