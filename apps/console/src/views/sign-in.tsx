/** @jsxImportSource hono/jsx */
import { Layout, type Notice } from "./layout.tsx";

export function SignInPage(props: { token: string; notice?: Notice | undefined }) {
  return (
    <Layout title="Sign in" notice={props.notice}>
      <section class="card sign-in">
        <h1>Sign in</h1>
        <p class="muted">
          With an operator API key (one of <code>API_KEYS</code>). The console keeps a session of 8 hours in a
          cookie, not the key.
        </p>
        <form class="stack" method="post" action="/console/sign-in">
          <input type="hidden" name="_csrf" value={props.token} />
          <label>
            Operator API key
            <input name="key" type="password" autocomplete="current-password" required />
          </label>
          <button type="submit" class="primary">
            Sign in
          </button>
        </form>
      </section>
    </Layout>
  );
}
