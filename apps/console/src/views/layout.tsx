/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";

/** A message shown once at the top of the next page (after a redirect) or of this one. */
export interface Notice {
  kind: "ok" | "problem";
  text: string;
  /** Field errors of a 422, `field: message`. */
  details?: string[];
}

export type Section = "webhooks" | "orders" | "dead-letters";

/** The signed-in operator, as every page after sign-in is handed it: who, and the form token. */
export interface Session {
  csrf: string;
  operatorId: string;
}

export interface PageFrame {
  title: string;
  /** Absent on the sign-in page. */
  signedIn?: Session & { section: Section };
  notice?: Notice | undefined;
}

/** Every console page: no script, one stylesheet from the gateway, forms that post back here. */
export function Layout(props: PageFrame & { children: Child }) {
  const { signedIn } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${props.title} · Cheese Store console`}</title>
        <link rel="stylesheet" href="/console/console.css" />
      </head>
      <body>
        <header>
          <span class="brand">Cheese Store console</span>
          {signedIn && (
            <>
              <nav>
                <a
                  href="/console/webhooks"
                  aria-current={signedIn.section === "webhooks" ? "page" : undefined}
                >
                  Webhooks
                </a>
                <a href="/console/orders" aria-current={signedIn.section === "orders" ? "page" : undefined}>
                  Orders
                </a>
                <a
                  href="/console/dead-letters"
                  aria-current={signedIn.section === "dead-letters" ? "page" : undefined}
                >
                  Event dead letters
                </a>
                <a href="/docs">API reference</a>
              </nav>
              <span class="who">
                operator <code>{signedIn.operatorId}</code>
              </span>
              <form method="post" action="/console/sign-out">
                <Csrf token={signedIn.csrf} />
                <button type="submit">Sign out</button>
              </form>
            </>
          )}
        </header>
        <main>
          {props.notice && <NoticeBox notice={props.notice} />}
          {props.children}
        </main>
      </body>
    </html>
  );
}

function NoticeBox({ notice }: { notice: Notice }) {
  return (
    <div class={`notice ${notice.kind}`} role={notice.kind === "problem" ? "alert" : "status"}>
      {notice.text}
      {notice.details && notice.details.length > 0 && (
        <ul>
          {notice.details.map((d) => (
            <li>{d}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** The hidden field every form of a session carries. */
export function Csrf({ token }: { token: string }) {
  return <input type="hidden" name="_csrf" value={token} />;
}

/** A form with one button, posting to `action` with the session's CSRF token. */
export function ActionButton(props: {
  action: string;
  csrf: string;
  label: string;
  kind?: "primary" | "danger";
  fields?: Record<string, string>;
}) {
  return (
    <form class="inline" method="post" action={props.action}>
      <Csrf token={props.csrf} />
      {Object.entries(props.fields ?? {}).map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
      <button type="submit" class={props.kind}>
        {props.label}
      </button>
    </form>
  );
}

/** A time as `2026-03-01 10:00:05 UTC`, machine-readable in `datetime`. */
export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  return <time datetime={at}>{at.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC")}</time>;
}

export function Badge({ status }: { status: string }) {
  return <span class={`badge ${status}`}>{status.replaceAll("_", " ")}</span>;
}
