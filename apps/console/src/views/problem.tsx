/** @jsxImportSource hono/jsx */
import { Layout, type Section } from "./layout.tsx";

/** A page that could not be shown: what the service said, and a way back. */
export function ProblemPage(props: {
  session?: { csrf: string; operatorId: string; section: Section } | undefined;
  title: string;
  message: string;
  back: { href: string; label: string };
}) {
  return (
    <Layout title={props.title} signedIn={props.session} notice={{ kind: "problem", text: props.message }}>
      <h1>{props.title}</h1>
      <p>
        <a href={props.back.href}>{props.back.label}</a>
      </p>
    </Layout>
  );
}
