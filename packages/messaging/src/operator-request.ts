import { connect, ErrorCode, NatsError, nkeyAuthenticator } from "nats";
import { decodeJson, encodeJson } from "./json.ts";
import { NoRespondersError, RemoteError, RequestTimeoutError } from "./port.ts";

export interface OperatorRequestOptions {
  /** The NATS servers, comma-separated as `NATS_URL`. */
  servers: string;
  /** The nkey seed of the identity to connect as (`monitor`, `permissions.ts`); unset: none. */
  nkeySeed?: Uint8Array;
  subject: string;
  payload: unknown;
  timeoutMs: number;
}

/**
 * One request from an operator's command (`pnpm rebuild`) to a service: a connection of its own
 * for that request only (an operator's identity may not make the JetStream streams a bus makes at
 * connect), the service's reply envelope opened as a bus request opens it. No replica serving the
 * subject: {@link NoRespondersError}; no reply in time: {@link RequestTimeoutError}; a refusal:
 * {@link RemoteError}.
 */
export async function operatorRequest(options: OperatorRequestOptions): Promise<unknown> {
  const nc = await connect({
    servers: options.servers.split(","),
    name: "operator",
    ...(options.nkeySeed ? { authenticator: nkeyAuthenticator(options.nkeySeed) } : {}),
  });
  try {
    const reply = await nc
      .request(options.subject, encodeJson(options.payload), { timeout: options.timeoutMs })
      .catch((error: unknown) => {
        if (error instanceof NatsError && error.code === ErrorCode.NoResponders)
          throw new NoRespondersError(options.subject);
        if (error instanceof NatsError && error.code === ErrorCode.Timeout)
          throw new RequestTimeoutError(options.subject, options.timeoutMs);
        throw error;
      });
    const envelope = decodeJson(reply.data) as
      | { ok: true; data: unknown }
      | { ok: false; error: ConstructorParameters<typeof RemoteError>[0] };
    if (!envelope.ok) throw new RemoteError(envelope.error);
    return envelope.data;
  } finally {
    await nc.close();
  }
}
