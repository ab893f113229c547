/** @jsxImportSource hono/jsx */

import { unwrap } from "@cheese/client";
import { ShipmentInput } from "@cheese/contracts";
import type { Hono } from "hono";
import { type ConsoleContext, PAGE_SIZE, view } from "../context.ts";
import { idOf, invalid, localTime, text } from "../requests.tsx";
import { OrdersPage } from "../views/orders.tsx";

/**
 * Orders (`/v2/store/orders` and `/v2/store/order`), the operator as the caller: listed, shipped
 * and delivered.
 */
export function orderRoutes(app: Hono, ctx: ConsoleContext): void {
  const { api, seeOther, flash, takeNotice, notFoundPage, page, action } = ctx;

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
}
