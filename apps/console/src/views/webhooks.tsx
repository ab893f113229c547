/** @jsxImportSource hono/jsx */
import type { Schemas } from "@cheese/client";
import { webhookEventKinds } from "@cheese/contracts";
import { ActionButton, Badge, Csrf, Layout, type Notice, Time } from "./layout.tsx";

type Delivery = Schemas["Delivery"];
type Webhook = Schemas["Webhook"];

interface Session {
  csrf: string;
  operatorId: string;
}

const frame = (session: Session) => ({ ...session, section: "webhooks" as const });

/** The registrations, oldest first, and the form that adds one. */
export function WebhooksPage(props: {
  session: Session;
  webhooks: Webhook[];
  nextCursor: string | null;
  notice?: Notice | undefined;
  /** What the form held when it was refused, so nothing typed is lost. */
  draft?: { url: string; description: string; events: string[] } | undefined;
}) {
  const { session, webhooks } = props;
  return (
    <Layout title="Webhooks" signedIn={frame(session)} notice={props.notice}>
      <h1>Webhook registrations</h1>
      {webhooks.length === 0 ? (
        <p class="muted">No registration yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>URL</th>
              <th>Events</th>
              <th>Status</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {webhooks.map((w) => (
              <tr data-webhook={String(w.id)}>
                <td class="num">
                  <a href={`/console/webhooks/${w.id}`}>#{w.id}</a>
                </td>
                <td>
                  <a href={`/console/webhooks/${w.id}`} class="mono">
                    {w.url}
                  </a>
                  {w.description && <div class="muted">{w.description}</div>}
                </td>
                <td>{w.events.join(", ")}</td>
                <td>
                  <Badge status={w.status} />
                  {w.statusReason && <div class="muted">{w.statusReason}</div>}
                  {w.status !== "active" && (
                    <div class="muted">
                      since <Time at={w.statusSince} />
                    </div>
                  )}
                </td>
                <td>
                  <Time at={w.createdAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.nextCursor && (
        <p class="pager">
          <a href={`/console/webhooks?cursor=${encodeURIComponent(props.nextCursor)}`}>Next page →</a>
        </p>
      )}

      <h2>Register a webhook</h2>
      <section class="card">
        <form class="stack" method="post" action="/console/webhooks">
          <Csrf token={session.csrf} />
          <label>
            URL
            <input
              name="url"
              type="url"
              required
              placeholder="https://example.com/hooks/cheese"
              value={props.draft?.url}
            />
          </label>
          <label>
            Description <span class="muted">(optional)</span>
            <input name="description" type="text" maxlength={500} value={props.draft?.description} />
          </label>
          <fieldset class="kinds">
            <legend>Events</legend>
            {webhookEventKinds.map((kind) => (
              <label>
                <input
                  type="checkbox"
                  name="events"
                  value={kind}
                  checked={props.draft ? props.draft.events.includes(kind) : kind.startsWith("order.")}
                />{" "}
                <code>{kind}</code>
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary">
            Register
          </button>
        </form>
      </section>
    </Layout>
  );
}

const deliveryFilters = [
  { label: "All deliveries", status: undefined },
  { label: "Dead letters", status: "dead_lettered" },
  { label: "Waiting", status: "pending,attempting,retry_scheduled" },
  { label: "Delivered", status: "delivered" },
] as const;

/** One registration: its facts and status, what an operator can do to it, and its deliveries. */
export function WebhookPage(props: {
  session: Session;
  webhook: Webhook;
  deliveries: Delivery[];
  nextCursor: string | null;
  /** The delivery list's filter, as in `?status=`. */
  filter: string | undefined;
  notice?: Notice | undefined;
  /** A secret just made (registration or rotation), shown this once. */
  secret?: { value: string; previousExpiresAt?: string | null } | undefined;
}) {
  const { session, webhook: w } = props;
  const base = `/console/webhooks/${w.id}`;
  return (
    <Layout title={`Webhook #${w.id}`} signedIn={frame(session)} notice={props.notice}>
      <p>
        <a href="/console/webhooks">← All registrations</a>
      </p>
      <h1>
        Webhook #{w.id} <Badge status={w.status} />
      </h1>
      {props.secret && (
        <section class="card" role="status">
          <h2>Signing secret</h2>
          <p>Shown this once: copy it to the receiver now.</p>
          <code class="secret" data-secret>
            {props.secret.value}
          </code>
          {props.secret.previousExpiresAt && (
            <p class="muted">
              The previous secret also signs until <Time at={props.secret.previousExpiresAt} />.
            </p>
          )}
        </section>
      )}
      <section class="card">
        <dl class="facts">
          <dt>URL</dt>
          <dd class="mono">{w.url}</dd>
          <dt>Description</dt>
          <dd>{w.description ?? <span class="muted">—</span>}</dd>
          <dt>Events</dt>
          <dd>{w.events.join(", ")}</dd>
          <dt>Status</dt>
          <dd data-status={w.status}>
            <Badge status={w.status} /> since <Time at={w.statusSince} />
            {w.statusReason && <div>{w.statusReason}</div>}
            {w.failingSince && (
              <div class="muted">
                every attempt has failed since <Time at={w.failingSince} />
              </div>
            )}
          </dd>
          <dt>Secret rotation</dt>
          <dd>
            {w.previousSecretExpiresAt ? (
              <>
                previous secret signs until <Time at={w.previousSecretExpiresAt} />
              </>
            ) : (
              <span class="muted">one secret signs</span>
            )}
          </dd>
          <dt>Created</dt>
          <dd>
            <Time at={w.createdAt} />
          </dd>
        </dl>
        <div class="actions">
          {w.status === "active" ? (
            <ActionButton action={`${base}/pause`} csrf={session.csrf} label="Pause" />
          ) : (
            <ActionButton
              action={`${base}/resume`}
              csrf={session.csrf}
              label={w.status === "disabled" ? "Re-enable" : "Resume"}
              kind="primary"
            />
          )}
          <ActionButton action={`${base}/test`} csrf={session.csrf} label="Send test event" />
          <ActionButton action={`${base}/replay`} csrf={session.csrf} label="Replay dead letters" />
          <ActionButton action={`${base}/rotate-secret`} csrf={session.csrf} label="Rotate secret" />
          <ActionButton action={`${base}/delete`} csrf={session.csrf} label="Delete" kind="danger" />
        </div>
      </section>

      <h2>Replay a window</h2>
      <section class="card">
        <form class="row" method="post" action={`${base}/replay`}>
          <Csrf token={session.csrf} />
          <label>
            Created from (UTC)
            <br />
            <input type="datetime-local" name="since" step="1" />
          </label>
          <label>
            until (UTC)
            <br />
            <input type="datetime-local" name="until" step="1" />
          </label>
          <label>
            <input type="checkbox" name="status" value="dead_lettered" checked /> dead letters
          </label>
          <label>
            <input type="checkbox" name="status" value="delivered" /> delivered
          </label>
          <button type="submit">Replay window</button>
        </form>
      </section>

      <h2>Deliveries</h2>
      <p>
        {deliveryFilters.map((f, i) => {
          const href = f.status ? `${base}?status=${f.status}` : base;
          const current = props.filter === f.status;
          return (
            <>
              {i > 0 && " · "}
              <a href={href} aria-current={current ? "page" : undefined}>
                {current ? <strong>{f.label}</strong> : f.label}
              </a>
            </>
          );
        })}
        {" · "}
        <a href={props.filter ? `${base}?status=${props.filter}` : base}>Refresh</a>
      </p>
      {props.deliveries.length === 0 ? (
        <p class="muted">No delivery here.</p>
      ) : (
        <DeliveriesTable deliveries={props.deliveries} />
      )}
      {props.nextCursor && (
        <p class="pager">
          <a
            href={`${base}?${new URLSearchParams({ ...(props.filter ? { status: props.filter } : {}), cursor: props.nextCursor })}`}
          >
            Older deliveries →
          </a>
        </p>
      )}
    </Layout>
  );
}

function DeliveriesTable({ deliveries }: { deliveries: Delivery[] }) {
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
              <td class="num">#{d.id}</td>
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
