/** @jsxImportSource hono/jsx */
import type { Schemas } from "@cheese/client";
import type { Child } from "hono/jsx";
import { ActionButton, Csrf, Layout, type Notice, type Session, Time } from "./layout.tsx";

type Order = Schemas["Order"];

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
      <Queue
        queue={props.toShip}
        empty="No approved order is waiting."
        action="Ship"
        cursorParam="shipCursor"
        act={(order) => (
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
        )}
      />

      <h2 id="to-deliver">To deliver: shipped ({props.toDeliver.total})</h2>
      <Queue
        queue={props.toDeliver}
        empty="No shipped order is waiting."
        action="Deliver"
        cursorParam="deliverCursor"
        act={(order) => (
          <>
            <div class="muted">
              shipped <Time at={order.shipDate} />
            </div>
            <ActionButton
              action={`/console/orders/${order.id}/deliver`}
              csrf={session.csrf}
              label="Mark delivered"
              kind="primary"
            />
          </>
        )}
      />
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

/** One queue of orders: a table with the action each row offers, and a link to the next page. */
function Queue(props: {
  queue: OrderQueue;
  empty: string;
  action: string;
  cursorParam: string;
  act: (order: Order) => Child;
}) {
  if (props.queue.orders.length === 0) return <p class="muted">{props.empty}</p>;
  return (
    <>
      <table>
        <thead>
          <tr>
            <th>Order</th>
            <th>Items</th>
            <th>Ship to</th>
            <th>{props.action}</th>
          </tr>
        </thead>
        <tbody>
          {props.queue.orders.map((order) => (
            <tr data-order={String(order.id)}>
              <OrderCells order={order} />
              <td>{props.act(order)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.queue.nextCursor && (
        <p class="pager">
          <a href={`/console/orders?${props.cursorParam}=${encodeURIComponent(props.queue.nextCursor)}`}>
            More →
          </a>
        </p>
      )}
    </>
  );
}
