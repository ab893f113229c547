/** @jsxImportSource hono/jsx */
import type { Schemas } from "@cheese/client";
import { deliveryStatuses, webhookEventKinds, webhookSignatureAlgorithms } from "@cheese/contracts";
import { DeliveriesTable } from "./deliveries.tsx";
import { ActionButton, Badge, Csrf, Layout, type Notice, type Session, Time } from "./layout.tsx";

type Delivery = Schemas["Delivery"];
type FilterPreview = Schemas["FilterPreview"];
type Webhook = Schemas["Webhook"];

/**
 * What the throttle and auth fields held when a form was refused: everything but the secrets,
 * which are write-only and typed again.
 */
export interface ThrottleAuthDraft {
  perSecond: string;
  /** "keep" (edit only: leave the auth as it is), "none", or an auth type. */
  authType: string;
  tokenUrl: string;
  clientId: string;
  scope: string;
}

/**
 * The throttle and receiver-auth fields of the create and edit forms. Secrets (the client secret,
 * header values) are never filled in: they are write-only, and the registration shows them masked.
 */
function ThrottleAuthFields(props: { webhook?: Webhook | undefined; draft?: ThrottleAuthDraft | undefined }) {
  const { webhook: w } = props;
  const current = w?.auth ?? null;
  const oauth2 = current?.type === "oauth2_client_credentials" ? current : null;
  const shown: ThrottleAuthDraft = props.draft ?? {
    perSecond: w?.rateLimit ? String(w.rateLimit.perSecond) : "",
    authType: current ? "keep" : "none",
    tokenUrl: oauth2?.tokenUrl ?? "",
    clientId: oauth2?.clientId ?? "",
    scope: oauth2?.scope ?? "",
  };
  const authTypes = [
    ...(current ? [["keep", "Keep the current auth"]] : []),
    ["none", "None (signatures only)"],
    ["oauth2_client_credentials", "OAuth2 client credentials"],
    ["headers", "Static headers"],
  ];
  return (
    <>
      <label>
        Throttle, attempts per second <span class="muted">(optional, 1 to 1000; empty: no limit)</span>
        <input name="perSecond" type="number" min={1} max={1000} step={1} value={shown.perSecond} />
      </label>
      <fieldset class="stack" data-auth>
        <legend>Receiver auth</legend>
        {current && (
          <p class="muted" data-current-auth>
            Now:{" "}
            {current.type === "headers"
              ? `static headers ${Object.entries(current.headers)
                  .map(([name, value]) => `${name}: ${value}`)
                  .join(", ")}`
              : `OAuth2 client credentials, client ${current.clientId}, secret ${current.clientSecret}`}
          </p>
        )}
        <label>
          Authenticate with
          <select name="authType">
            {authTypes.map(([value, label]) => (
              <option value={value} selected={shown.authType === value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          OAuth2 token endpoint
          <input
            name="tokenUrl"
            type="url"
            value={shown.tokenUrl}
            placeholder="https://auth.example.com/oauth2/token"
          />
        </label>
        <label>
          OAuth2 client id
          <input name="clientId" type="text" maxlength={256} value={shown.clientId} />
        </label>
        <label>
          OAuth2 client secret <span class="muted">(write-only)</span>
          <input name="clientSecret" type="password" maxlength={1024} autocomplete="new-password" />
        </label>
        <label>
          OAuth2 scope <span class="muted">(optional)</span>
          <input name="scope" type="text" maxlength={1024} value={shown.scope} />
        </label>
        <label>
          Static headers <span class="muted">(one "Name: value" a line; values are write-only)</span>
          <textarea name="authHeaders" rows={3} autocomplete="off" />
        </label>
      </fieldset>
    </>
  );
}

/** The registrations, oldest first, and the form that adds one. */
export function WebhooksPage(props: {
  session: Session;
  webhooks: Webhook[];
  nextCursor: string | null;
  notice?: Notice | undefined;
  /** What the form held when it was refused, so nothing typed is lost. */
  draft?:
    | ({ url: string; description: string; events: string[]; ordered: boolean } & ThrottleAuthDraft)
    | undefined;
}) {
  const { session, webhooks } = props;
  return (
    <Layout title="Webhooks" signedIn={{ ...session, section: "webhooks" }} notice={props.notice}>
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
          <label>
            <input type="checkbox" name="ordered" value="true" checked={props.draft?.ordered ?? false} />{" "}
            Ordered: each order's, cheese's, customer's or API key's events one at a time, in the order they
            happened
          </label>
          <ThrottleAuthFields draft={props.draft} />
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
  /** The delivery list's kind filter, as in `?type=`. */
  typeFilter?: string | undefined;
  notice?: Notice | undefined;
  /** What the edit form held when it was refused, so nothing typed is lost. */
  editDraft?: WebhookDraft | undefined;
  /** The edit form's refusals by field (`filter`: the API's 422 for the CEL expression). */
  editErrors?: FieldErrors | undefined;
  /** The edit form's filter tried on the most recent events of its kinds ("Try it"). */
  filterPreview?: FilterPreview | undefined;
  /** A secret just made (registration or rotation), shown this once. */
  secret?: { value: string; previousExpiresAt?: string | null } | undefined;
}) {
  const { session, webhook: w } = props;
  const base = `/console/webhooks/${w.id}`;
  return (
    <Layout title={`Webhook #${w.id}`} signedIn={{ ...session, section: "webhooks" }} notice={props.notice}>
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
          <dt>Filter</dt>
          <dd>
            {w.filter ? (
              <code data-filter>{w.filter}</code>
            ) : (
              <span class="muted">every event of these kinds</span>
            )}
          </dd>
          <dt>Ordered</dt>
          <dd>{w.ordered ? "yes: one aggregate's events one at a time, in order" : "no"}</dd>
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
          <dt>Throttle</dt>
          <dd data-throttle>
            {w.rateLimit ? `${w.rateLimit.perSecond} attempts per second` : <span class="muted">none</span>}
          </dd>
          <dt>Receiver auth</dt>
          <dd data-receiver-auth>
            {w.auth === null ? (
              <span class="muted">signatures only</span>
            ) : w.auth.type === "headers" ? (
              <>
                static headers <span class="mono">{Object.keys(w.auth.headers).join(", ")}</span> (values
                hidden)
              </>
            ) : (
              <>
                OAuth2 client credentials from <span class="mono">{w.auth.tokenUrl}</span>, client{" "}
                <span class="mono">{w.auth.clientId}</span>
                {w.auth.scope && ` (scope ${w.auth.scope})`}
              </>
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
          {/* A GET to the confirmation page: nothing is deleted until it is confirmed there. */}
          <form class="inline" method="get" action={`${base}/delete`}>
            <button type="submit" class="danger">
              Delete…
            </button>
          </form>
        </div>
      </section>

      <h2>Edit</h2>
      <section class="card">
        <EditForm
          session={session}
          webhook={w}
          draft={props.editDraft}
          errors={props.editErrors}
          preview={props.filterPreview}
        />
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
        <a href={listHref(base, { status: props.filter, type: props.typeFilter })}>Refresh</a>
      </p>
      <form class="row" method="get" action={base} aria-label="Filter deliveries">
        <label>
          Kind
          <br />
          <select name="type">
            <option value="">all kinds</option>
            {webhookEventKinds.map((kind) => (
              <option value={kind} selected={props.typeFilter === kind}>
                {kind}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <br />
          <select name="status">
            <option value="">all statuses</option>
            {deliveryStatuses.map((status) => (
              <option value={status} selected={props.filter === status}>
                {status.replace("_", " ")}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Filter</button>
      </form>
      {props.deliveries.length === 0 ? (
        <p class="muted">No delivery here.</p>
      ) : (
        <DeliveriesTable base={base} deliveries={props.deliveries} />
      )}
      {props.nextCursor && (
        <p class="pager">
          <a
            href={listHref(base, { status: props.filter, type: props.typeFilter, cursor: props.nextCursor })}
          >
            Older deliveries →
          </a>
        </p>
      )}
    </Layout>
  );
}

/** The delivery list's address with the filters and cursor given (empty ones left out). */
function listHref(
  base: string,
  query: { status?: string | undefined; type?: string | undefined; cursor?: string },
) {
  const params = new URLSearchParams(
    Object.entries(query).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
  return params.size > 0 ? `${base}?${params}` : base;
}

export interface WebhookDraft extends ThrottleAuthDraft {
  url: string;
  description: string;
  events: string[];
  signatureAlgorithms: string[];
  /** The CEL filter as typed; empty for none. */
  filter: string;
  ordered: boolean;
}

/** A form's refusals, one message per field name (`filter`, `url`, ...). */
export type FieldErrors = Record<string, string>;

/** Changes a registration in place (PATCH): its URL, description, kinds, filter, signatures, throttle and auth. */
function EditForm(props: {
  session: Session;
  webhook: Webhook;
  draft?: WebhookDraft | undefined;
  errors?: FieldErrors | undefined;
  preview?: FilterPreview | undefined;
}) {
  const { webhook: w } = props;
  const shown = props.draft ?? {
    url: w.url,
    description: w.description ?? "",
    events: w.events,
    signatureAlgorithms: w.signatureAlgorithms,
    filter: w.filter ?? "",
    ordered: w.ordered,
  };
  const filterError = props.errors?.filter;
  return (
    <form
      class="stack"
      method="post"
      action={`/console/webhooks/${w.id}/edit`}
      aria-label="Edit registration"
    >
      <Csrf token={props.session.csrf} />
      <label>
        Receiving URL
        <input name="url" type="url" required value={shown.url} />
      </label>
      <label>
        Description <span class="muted">(optional)</span>
        <input name="description" type="text" maxlength={500} value={shown.description} />
      </label>
      <fieldset class="kinds">
        <legend>Events</legend>
        {webhookEventKinds.map((kind) => (
          <label>
            <input type="checkbox" name="events" value={kind} checked={shown.events.includes(kind)} />{" "}
            <code>{kind}</code>
          </label>
        ))}
      </fieldset>
      <label>
        Filter <span class="muted">(optional; a CEL expression over type, created_at and data)</span>
        <textarea
          name="filter"
          rows={2}
          maxlength={1024}
          placeholder='type == "order.placed" && data.total > 100.0'
          aria-invalid={filterError ? "true" : undefined}
          aria-describedby={filterError ? "filter-error" : undefined}
        >
          {shown.filter}
        </textarea>
      </label>
      {filterError && (
        <p class="field-error" id="filter-error" data-field-error="filter">
          {filterError}
        </p>
      )}
      {props.preview && <FilterPreviewResult preview={props.preview} />}
      <fieldset class="kinds">
        <legend>Signatures</legend>
        {webhookSignatureAlgorithms.map((algorithm) => (
          <label>
            <input
              type="checkbox"
              name="signatureAlgorithms"
              value={algorithm}
              checked={shown.signatureAlgorithms.includes(algorithm)}
            />{" "}
            <code>{algorithm}</code>
          </label>
        ))}
      </fieldset>
      <label>
        <input type="checkbox" name="ordered" value="true" checked={shown.ordered} /> Ordered: each order's,
        cheese's, customer's or API key's events one at a time, in the order they happened
      </label>
      <ThrottleAuthFields webhook={w} draft={props.draft} />
      {/* Save first: Enter in a field submits with the form's first button. */}
      <button type="submit" class="primary">
        Save changes
      </button>{" "}
      {/* Posts the same form elsewhere: nothing is saved, the page comes back with the result. */}
      <button type="submit" formaction={`/console/webhooks/${w.id}/filter-preview`} formnovalidate>
        Try it
      </button>{" "}
      <span class="muted">(the filter, on the most recent events of the kinds ticked; nothing is saved)</span>
    </form>
  );
}

/** What "Try it" found: how many of the recent events the filter matches, and which. */
function FilterPreviewResult({ preview }: { preview: FilterPreview }) {
  return (
    <section class="preview" data-filter-preview aria-label="Filter tried">
      <p data-matched={String(preview.matched)} data-total={String(preview.total)}>
        {preview.total === 0 ? (
          "No recent event of these kinds to try it on."
        ) : (
          <>
            Matches <strong>{preview.matched}</strong> of the {preview.total} most recent{" "}
            {preview.total === 1 ? "event" : "events"} of these kinds.
          </>
        )}
      </p>
      {preview.items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Event</th>
              <th>Kind</th>
              <th>Created</th>
              <th>Matched</th>
            </tr>
          </thead>
          <tbody>
            {preview.items.map((item) => (
              <tr data-event={item.id} data-matched={String(item.matched)}>
                <td class="mono">{item.id}</td>
                <td>
                  <code>{item.type}</code>
                </td>
                <td>
                  <Time at={item.created_at} />
                </td>
                <td>{item.matched ? "yes" : "no"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Asks before a registration is deleted: the one form that deletes it (works without script). */
export function DeleteWebhookPage(props: { session: Session; webhook: Webhook }) {
  const { session, webhook: w } = props;
  const base = `/console/webhooks/${w.id}`;
  return (
    <Layout title={`Delete webhook #${w.id}?`} signedIn={{ ...session, section: "webhooks" }}>
      <h1>Delete webhook #{w.id}?</h1>
      <section class="card">
        <p>
          Nothing more will be sent to <code>{w.url}</code>: its waiting and dead-lettered deliveries are
          cancelled. This cannot be undone.
        </p>
        <div class="actions">
          <ActionButton
            action={`${base}/delete`}
            csrf={session.csrf}
            label="Delete this registration"
            kind="danger"
            fields={{ confirm: "delete" }}
          />
          <a href={base}>Cancel, keep it</a>
        </div>
      </section>
    </Layout>
  );
}
