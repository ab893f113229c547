import { MASKED_SECRET, type WebhookAuth, type WebhookAuthInput } from "@cheese/contracts";
import type { SealedSecret, SecretBox } from "./secrets.ts";

/**
 * A registration's receiver auth (docs/webhooks.md "Receiver auth") as recorded: sealed at
 * registration, masked when answered. At attempt time it becomes headers in
 * `delivery/attempt-auth.ts` (`ReceiverAuth`).
 *
 * As events hold it: the OAuth2
 * client's secret and every static header's value sealed like the signing secret, so the event
 * store and its backups hold nothing a receiver would accept. Static headers are a list, in the
 * order given, so a header's name is never an object key.
 */
export type SealedAuth =
  | {
      type: "oauth2_client_credentials";
      tokenUrl: string;
      clientId: string;
      clientSecret: SealedSecret;
      scope: string | null;
    }
  | { type: "headers"; headers: { name: string; value: SealedSecret }[] };

export function sealAuth(box: SecretBox, auth: WebhookAuthInput): SealedAuth {
  if (auth.type === "headers") {
    return {
      type: "headers",
      headers: Object.entries(auth.headers).map(([name, value]) => ({ name, value: box.seal(value) })),
    };
  }
  return {
    type: "oauth2_client_credentials",
    tokenUrl: auth.tokenUrl,
    clientId: auth.clientId,
    clientSecret: box.seal(auth.clientSecret),
    scope: auth.scope ?? null,
  };
}

/** The auth as answered and projected: names and the client id, never a secret or a part of one. */
export function maskedAuth(auth: SealedAuth | null | undefined): WebhookAuth | null {
  if (!auth) return null;
  if (auth.type === "headers") {
    return {
      type: "headers",
      headers: Object.fromEntries(auth.headers.map(({ name }) => [name, MASKED_SECRET] as const)),
    };
  }
  const { tokenUrl, clientId, scope } = auth;
  return { type: "oauth2_client_credentials", tokenUrl, clientId, clientSecret: MASKED_SECRET, scope };
}
