/** @jsxImportSource hono/jsx */
import type { Schemas } from "@cheese/client";

type DeadLetter = Schemas["DeadLetter"];

import { ActionButton, Layout, type Notice, type Session, Time } from "./layout.tsx";

/**
 * Integration events a service's consumer kept failing: each with the consumer, the event, the
 * last error, and buttons to replay it to that consumer or discard it.
 */
export function DeadLettersPage(props: {
  session: Session;
  letters: DeadLetter[];
  nextCursor: string | null;
  notice?: Notice | undefined;
}) {
  const { session } = props;
  return (
    <Layout
      title="Event dead letters"
      signedIn={{ ...session, section: "dead-letters" }}
      notice={props.notice}
    >
      <h1>Event dead letters</h1>
      <p class="muted">
        Integration events a service kept failing to handle (retried meanwhile, with a backoff of up to 5
        minutes). Replay one once its cause is fixed: it goes to the consumer that failed it, and to no other.
      </p>
      {props.letters.length === 0 ? (
        <p class="muted">No dead letter: every event was handled.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th>Dead letter</th>
              <th>Consumer</th>
              <th>Event</th>
              <th>Last error</th>
              <th>Act</th>
            </tr>
          </thead>
          <tbody>
            {props.letters.map((letter) => (
              <tr data-dead-letter={letter.id}>
                <td class="num">
                  #{letter.id}
                  <div class="muted">
                    <Time at={letter.deadLetteredAt} />
                  </div>
                </td>
                <td>
                  <code>{letter.consumer}</code>
                </td>
                <td>
                  <code>{letter.event.subject}</code>
                  <div class="muted">
                    id <code>{letter.event.id}</code>, published <Time at={letter.event.publishedAt} />
                  </div>
                  <pre>{JSON.stringify(letter.event.payload, null, 2)}</pre>
                </td>
                <td>
                  {letter.error}
                  <div class="muted">
                    {letter.deliveries} deliveries since <Time at={letter.firstFailedAt} />
                  </div>
                </td>
                <td>
                  <ActionButton
                    action={`/console/dead-letters/${letter.id}/replay`}
                    csrf={session.csrf}
                    label="Replay"
                    kind="primary"
                  />
                  <ActionButton
                    action={`/console/dead-letters/${letter.id}/delete`}
                    csrf={session.csrf}
                    label="Discard"
                    kind="danger"
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.nextCursor && (
        <p class="pager">
          <a href={`/console/dead-letters?cursor=${encodeURIComponent(props.nextCursor)}`}>More →</a>
        </p>
      )}
    </Layout>
  );
}
