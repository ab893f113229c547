import type { TokenScope as Scope } from "@cheese/contracts";
import type { AuthorizationRequest } from "./authorization-request.ts";

const scopeText: Record<Scope, string> = {
  "read:cheeses": "read the cheese catalogue",
  "write:cheeses": "create and update cheeses",
  "read:orders": "see your orders",
  "write:orders": "place and cancel orders for you",
};

/**
 * No framing (clickjacking), no scripts, nothing loaded from elsewhere, no `<base>` to move the
 * form's relative action (`default-src` covers neither `form-action` nor `base-uri`). The form
 * posts to this origin, whose answer is a redirect to the client's redirect URI; browsers hold
 * that redirect to `form-action` too, so the one origin this request was checked to return to
 * (or, for an app's own scheme, that scheme) is allowed besides, and nothing else.
 */
export function pageSecurityHeaders(redirectUri?: string): Record<string, string> {
  const formAction = ["'self'", ...(redirectUri ? [redirectSource(redirectUri)] : [])].join(" ");
  return {
    "Content-Security-Policy": `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; base-uri 'none'; frame-ancestors 'none'`,
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
  };
}

/** A CSP source for a registered redirect URI: its origin, or its scheme when it has none. */
function redirectSource(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.origin === "null" ? url.protocol : url.origin;
}

/**
 * The sign-in and consent page of GET /oauth/authorize. The authorization request travels in
 * hidden fields and is checked again when the form comes back.
 */
export function signInPage(request: AuthorizationRequest, problem?: string): string {
  const hidden: Record<string, string | undefined> = {
    response_type: request.responseType,
    client_id: request.client.id,
    redirect_uri: request.redirectUriGiven ? request.redirectUri : undefined,
    scope: request.scopes.join(" "),
    state: request.state,
    code_challenge: request.codeChallenge,
    code_challenge_method: request.codeChallenge ? "S256" : undefined,
  };
  const fields = Object.entries(hidden)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value!)}">`)
    .join("\n      ");
  const scopes = request.scopes.map((s) => `<li><code>${s}</code>: ${scopeText[s]}</li>`).join("");
  return layout(
    "Sign in to Cheese Store",
    `<h1>Sign in to Cheese Store</h1>
    <p><strong>${escapeHtml(request.client.id)}</strong> asks to:</p>
    <ul>${scopes}</ul>
    <p>It will be sent back to <code>${escapeHtml(request.redirectUri)}</code>.</p>
    ${problem ? `<p class="problem" role="alert">${escapeHtml(problem)}</p>` : ""}
    <form method="post" action="/oauth/authorize">
      ${fields}
      <label>Username <input name="username" autocomplete="username" required></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required></label>
      <button type="submit" name="decision" value="allow">Sign in and allow</button>
      <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
    </form>`,
  );
}

export function errorPage(message: string): string {
  return layout(
    "Authorization failed",
    `<h1>Authorization failed</h1><p role="alert">${escapeHtml(message)}</p>`,
  );
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)}</title>
  <style>
    body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; }
    label { display: block; margin: 0.75rem 0; }
    input:not([type=hidden]) { display: block; width: 100%; padding: 0.4rem; box-sizing: border-box; }
    button { margin: 0.5rem 0.5rem 0 0; padding: 0.5rem 1rem; }
    .problem { color: #a00; }
  </style>
</head>
<body>
  ${body}
</body>
</html>`;
}

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}
