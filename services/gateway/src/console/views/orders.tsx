/** @jsxImportSource hono/jsx */
import type { Order } from "@cheese/contracts";
import { ActionButton, Csrf, Layout, type Notice, Time } from "./layout.tsx";

interface Session {
  csrf: string;
  operatorId: string;
}

export interface OrderQueue {
  orders: Order[];
  total: number;
  nextCursor: string | null;
}

/** Orders waiting for fulfilment: approved ones to ship, shipped ones to mark delivered. */
export function OrdersPage(props: {
  session: Session;
  toShip: OrderQueue;
  toDeliver: OrderQueue;
  notice?: Notice | undefined;
}) {
  const { session } = props;
  return (
    <Layout title="Orders" signedIn={{ ...session, section: "orders" }} notice={props.notice}>
      <h1>Orders waiting for fulfilment</h1>

      <h2 id="to-ship">To ship: approved ({props.toShip.total})</h2>
      {props.toShip.orders.length === 0 ? (
        <p class="muted">No approved order is waiting.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Order</th>
              <th>Items</th>
              <th>Ship to</th>
              <th>Ship</th>
            </tr>
          </thead>
          <tbody>
            {props.toShip.orders.map((order) => (
              <tr data-order={String(order.id)}>
                <OrderCells order={order} />
                <td>
                  <form class="row" method="post" action={`/console/orders/${order.id}/ship`}>
                    <Csrf token={session.csrf} />
                    <label>
                      Carrier
                      <br />
                      <input name="carrier" required maxlength={100} size={10} />
                    </label>
                    <label>
                      Tracking number
                      <br />
                      <input name="trackingNumber" required maxlength={100} size={14} />
                    </label>
                    <label>
                      Estimated delivery (UTC)
                      <br />
                      <input name="estimatedDelivery" type="datetime-local" required />
                    </label>
                    <button type="submit" class="primary">
                      Ship
                    </button>
                  </form>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager cursor={props.toShip.nextCursor} param="shipCursor" />

      <h2 id="to-deliver">To deliver: shipped ({props.toDeliver.total})</h2>
      {props.toDeliver.orders.length === 0 ? (
        <p class="muted">No shipped order is waiting.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Order</th>
              <th>Items</th>
              <th>Ship to</th>
              <th>Deliver</th>
            </tr>
          </thead>
          <tbody>
            {props.toDeliver.orders.map((order) => (
              <tr data-order={String(order.id)}>
                <OrderCells order={order} />
                <td>
                  <div class="muted">
                    shipped <Time at={order.shipDate} />
                  </div>
                  <ActionButton
                    action={`/console/orders/${order.id}/deliver`}
                    csrf={session.csrf}
                    label="Mark delivered"
                    kind="primary"
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager cursor={props.toDeliver.nextCursor} param="deliverCursor" />
    </Layout>
  );
}

function OrderCells({ order }: { order: Order }) {
  const address = order.shippingAddress;
  return (
    <>
      <td class="num">
        #{order.id}
        <div class="muted">
          <Time at={order.createdAt} />
        </div>
      </td>
      <td>
        {order.items.map((item) => (
          <div>
            {item.quantity} × {item.cheeseName}
          </div>
        ))}
        <div class="muted">total ${order.total.toFixed(2)}</div>
        {order.notes && <div class="muted">note: {order.notes}</div>}
      </td>
      <td>
        {address.street}
        <br />
        {[address.zipCode, address.city].filter(Boolean).join(" ")}
        {address.state ? `, ${address.state}` : ""}
        <br />
        {address.country}
      </td>
    </>
  );
}

function Pager({ cursor, param }: { cursor: string | null; param: string }) {
  if (!cursor) return null;
  return (
    <p class="pager">
      <a href={`/console/orders?${param}=${encodeURIComponent(cursor)}`}>More →</a>
    </p>
  );
}
