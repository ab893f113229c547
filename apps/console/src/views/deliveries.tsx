/** @jsxImportSource hono/jsx */
// A registration's deliveries: the table its page lists them in, and one delivery's page (the body
// it sends, each attempt's request and the receiver's answer, Resend).
import type { Schemas } from "@cheese/client";
import { ActionButton, Badge, Layout, type Notice, type Session, Time } from "./layout.tsx";

type Delivery = Schemas["Delivery"];
type DeliveryDetail = Schemas["DeliveryDetail"];
type DeliveryAttemptDetail = DeliveryDetail["attempts"][number];

export function DeliveriesTable({ base, deliveries }: { base: string; deliveries: Delivery[] }) {
  return (
    <table>
      <thead>
        <tr>
          <th>Delivery</th>
          <th>Event</th>
          <th>Status</th>
          <th>Attempts</th>
          <th>Last response</th>
          <th>Next attempt</th>
          <th>Created</th>
        </tr>
      </thead>
      <tbody>
        {deliveries.map((d) => {
          const last = d.attempts.at(-1);
          const round = last?.round ?? 0;
          const inRound = d.attempts.filter((a) => a.round === round).length;
          return (
            <tr data-delivery={String(d.id)} data-status={d.status}>
              <td class="num">
                <a href={`${base}/deliveries/${d.id}`}>#{d.id}</a>
                {last?.sequence !== undefined && <div class="muted">lane #{last.sequence}</div>}
              </td>
              <td>
                <code>{d.eventType}</code>
                <div class="muted mono">{d.eventId}</div>
              </td>
              <td>
                <Badge status={d.status} />
              </td>
              <td class="num">
                {d.attempts.length}
                {round > 0 && (
                  <div class="muted">
                    {inRound} in replay {round}
                  </div>
                )}
              </td>
              <td>{last ? <LastResponse attempt={last} /> : <span class="muted">not attempted yet</span>}</td>
              <td>
                <Time at={d.nextAttemptAt} />
              </td>
              <td>
                <Time at={d.createdAt} />
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function LastResponse({ attempt }: { attempt: Delivery["attempts"][number] }) {
  const answer =
    attempt.outcome === "in_flight"
      ? "in flight"
      : attempt.statusCode !== null
        ? `HTTP ${attempt.statusCode}`
        : (attempt.error ?? attempt.outcome);
  return (
    <>
      <span>{answer}</span>
      {attempt.steer && <div data-steer={attempt.steer}>{steeredShort[attempt.steer]}</div>}
      {attempt.retryAfter && (
        <div class="muted">
          Retry-After: not before <Time at={attempt.retryAfter} />
        </div>
      )}
      {attempt.statusCode !== null &&
        attempt.error &&
        attempt.error !== `receiver answered ${attempt.statusCode}` && (
          <div class="muted">{attempt.error}</div>
        )}
      <div class="muted">
        <Time at={attempt.startedAt} />
        {attempt.durationMs !== null && ` · ${attempt.durationMs} ms`}
      </div>
    </>
  );
}

/** One delivery: the body it sends, each attempt's request and the receiver's answer, and Resend. */
export function DeliveryPage(props: {
  session: Session;
  webhookId: number;
  delivery: DeliveryDetail;
  notice?: Notice | undefined;
}) {
  const { session, delivery: d } = props;
  const base = `/console/webhooks/${props.webhookId}`;
  const resendable = d.status === "delivered" || d.status === "dead_lettered";
  return (
    <Layout title={`Delivery #${d.id}`} signedIn={{ ...session, section: "webhooks" }} notice={props.notice}>
      <p>
        <a href={base}>← Webhook #{props.webhookId}</a>
      </p>
      <h1>
        Delivery #{d.id} <Badge status={d.status} />
      </h1>
      <section class="card">
        <dl class="facts">
          <dt>Event</dt>
          <dd>
            <code>{d.eventType}</code> <span class="mono muted">{d.eventId}</span>
          </dd>
          <dt>Created</dt>
          <dd>
            <Time at={d.createdAt} />
          </dd>
          <dt>Next attempt</dt>
          <dd>
            <Time at={d.nextAttemptAt} />
          </dd>
        </dl>
        <div class="actions">
          {resendable ? (
            <ActionButton
              action={`${base}/deliveries/${d.id}/resend`}
              csrf={session.csrf}
              label="Resend"
              kind="primary"
            />
          ) : (
            <span class="muted">Resend is offered once the delivery is delivered or dead-lettered.</span>
          )}
        </div>
        <h2>Request body</h2>
        <pre class="bytes" data-body>
          {d.body}
        </pre>
      </section>
      <h2>Attempts</h2>
      {d.attempts.length === 0 && <p class="muted">Not attempted yet.</p>}
      {d.attempts.map((a) => (
        <section class="card" data-attempt={`${a.round}.${a.attempt}`} data-outcome={a.outcome}>
          <h2>
            {a.round > 0 ? `Round ${a.round}, attempt ${a.attempt}` : `Attempt ${a.attempt}`}:{" "}
            {a.outcome === "in_flight"
              ? "in flight"
              : a.statusCode !== null
                ? `HTTP ${a.statusCode}`
                : a.outcome}
          </h2>
          <p class="muted">
            <Time at={a.startedAt} />
            {a.durationMs !== null && ` · ${a.durationMs} ms`}
            {a.error && ` · ${a.error}`}
          </p>
          <Steering attempt={a} />
          <h3>Request</h3>
          {a.request ? (
            <>
              <p class="mono">POST {a.request.url}</p>
              <Headers headers={a.request.headers} name="request" />
            </>
          ) : (
            <p class="muted">Not recorded (in flight, or the process stopped during the attempt).</p>
          )}
          <h3>Answer</h3>
          {a.response ? (
            <>
              <Headers headers={a.response.headers} name="response" />
              <pre class="bytes" data-response-body>
                {a.response.body}
              </pre>
              {a.response.bodyTruncated && <p class="muted">Only the first 4 KiB of the body are kept.</p>}
            </>
          ) : (
            <p class="muted">{a.error ? `No answer: ${a.error}` : "No answer yet."}</p>
          )}
        </section>
      ))}
    </Layout>
  );
}

const steeredShort = {
  gone: "410 Gone: registration disabled",
  disable: "webhook-delivery: disable: registration disabled",
  abort: "webhook-delivery: abort: dead-lettered",
} as const;

const steered = {
  gone: "The receiver answered 410 Gone: the registration was disabled.",
  disable: "The receiver answered webhook-delivery: disable: the registration was disabled.",
  abort:
    "The receiver answered webhook-delivery: abort: the delivery was dead-lettered without further attempts.",
} as const;

/** What the receiver asked with its answer: a later retry (Retry-After), or to stop. */
function Steering({ attempt: a }: { attempt: DeliveryAttemptDetail }) {
  if (!a.retryAfter && !a.steer) return null;
  return (
    <div class="steer">
      {a.retryAfter && (
        <p data-retry-after={a.retryAfter}>
          The receiver asked (Retry-After) for no attempt before <Time at={a.retryAfter} />.
        </p>
      )}
      {a.steer && <p data-steer={a.steer}>{steered[a.steer]}</p>}
    </div>
  );
}

function Headers({ headers, name }: { headers: Record<string, string>; name: string }) {
  return (
    <table class="headers" data-headers={name}>
      <tbody>
        {Object.entries(headers).map(([header, value]) => (
          <tr>
            <th class="mono">{header}</th>
            <td class="mono">{value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
