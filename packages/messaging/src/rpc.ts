/**
 * Typed, validated RPC and integration events on top of a {@link MessageBus}. Definitions live
 * once in `@cheese/contracts`; both sides validate, so a contract drift shows up as a clear
 * 400 (bad request) or 500 (bad response) instead of a confusing failure further on.
 */
import type { z } from "zod";
import {
  type Closable,
  type ConsumeOptions,
  type DeliveredEvent,
  type Headers,
  type MessageBus,
  RemoteError,
} from "./port.ts";

export interface RpcDefinition<
  Request extends z.ZodType = z.ZodType,
  Response extends z.ZodType = z.ZodType,
> {
  /** `<service>.<aggregate>.<verb>`, served with queue group `<service>`. */
  subject: string;
  request: Request;
  response: Response;
}

export function defineRpc<Request extends z.ZodType, Response extends z.ZodType>(
  definition: RpcDefinition<Request, Response>,
): RpcDefinition<Request, Response> {
  return definition;
}

export interface CallOptions {
  timeoutMs: number;
  headers?: Headers;
}

export interface RpcContext {
  subject: string;
  headers: Headers;
}

/**
 * Validates the request (the same 400 the server would answer), sends it as given (so transforms
 * run once, on the server), and validates the reply (a malformed one is a 500 internal_error).
 */
export async function callRpc<Request extends z.ZodType, Response extends z.ZodType>(
  bus: MessageBus,
  definition: RpcDefinition<Request, Response>,
  payload: z.input<Request>,
  options: CallOptions,
): Promise<z.output<Response>> {
  const request = definition.request.safeParse(payload);
  if (!request.success) throw badRequest(definition.subject, request.error);
  const reply = await bus.request(definition.subject, payload, options);
  const response = definition.response.safeParse(reply);
  if (!response.success) {
    throw new RemoteError({
      status: 500,
      type: "internal_error",
      message: `malformed reply on ${definition.subject}: ${summarise(response.error)}`,
    });
  }
  return response.data;
}

/**
 * Serves a definition: invalid payloads get 400 bad_request listing the issues; a handler result
 * that breaks the response schema is a bug, so the bus logs it and replies a plain 500.
 */
export function serveRpc<Request extends z.ZodType, Response extends z.ZodType>(
  bus: MessageBus,
  definition: RpcDefinition<Request, Response>,
  options: { queue: string },
  handler: (payload: z.output<Request>, context: RpcContext) => Promise<z.input<Response>>,
): Closable {
  return bus.serve(definition.subject, options, async ({ subject, payload, headers }) => {
    const request = definition.request.safeParse(payload);
    if (!request.success) throw badRequest(subject, request.error);
    const result = await handler(request.data, { subject, headers });
    const response = definition.response.safeParse(result);
    if (!response.success) {
      throw new Error(`handler of ${subject} broke the response schema: ${summarise(response.error)}`);
    }
    return result;
  });
}

export interface EventDefinition<Subject extends string = string, Schema extends z.ZodType = z.ZodType> {
  subject: Subject;
  schema: Schema;
}

export function defineEvent<const Subject extends string, Schema extends z.ZodType>(
  definition: EventDefinition<Subject, Schema>,
): EventDefinition<Subject, Schema> {
  return definition;
}

/** Publishes a validated event; an invalid payload is a bug in the publisher, so it throws. */
export async function publishEvent<Schema extends z.ZodType>(
  bus: MessageBus,
  definition: EventDefinition<string, Schema>,
  event: { id: string; payload: z.input<Schema>; headers?: Headers },
): Promise<void> {
  const checked = definition.schema.safeParse(event.payload);
  if (!checked.success) {
    throw new Error(`invalid ${definition.subject} payload: ${summarise(checked.error)}`);
  }
  await bus.publish({
    id: event.id,
    subject: definition.subject,
    payload: event.payload,
    headers: event.headers,
  });
}

/** A delivered event typed by its definition; switch on `subject` to narrow `payload`. */
export type TypedEvent<Definition> =
  Definition extends EventDefinition<infer Subject, infer Schema>
    ? Omit<DeliveredEvent, "subject" | "payload"> & { subject: Subject; payload: z.output<Schema> }
    : never;

export interface ConsumeEventsOptions<Definition extends EventDefinition>
  extends Omit<ConsumeOptions, "subjects" | "handler"> {
  /** One durable over several event types keeps their relative order. */
  events: readonly Definition[];
  handler: (event: TypedEvent<Definition>) => Promise<void>;
  /**
   * An event that fails its schema will fail every redelivery too, so it is acked and reported
   * here (log it) instead of blocking the durable.
   */
  onInvalid: (event: DeliveredEvent, error: Error) => void;
  /**
   * Asked first, before the payload is parsed: an event it answers false for is acked without
   * reaching the handler. For a consumer that needs only some of its events at a time (the
   * notification service, events no webhook subscribes to), so that those cost no parsing.
   */
  wanted?: (event: DeliveredEvent) => boolean | Promise<boolean>;
}

export function consumeEvents<Definition extends EventDefinition>(
  bus: MessageBus,
  options: ConsumeEventsOptions<Definition>,
): Closable {
  const { events, handler, onInvalid, wanted, ...rest } = options;
  const bySubject = new Map<string, EventDefinition>(events.map((d) => [d.subject, d]));
  return bus.consume({
    ...rest,
    subjects: [...bySubject.keys()],
    handler: async (event) => {
      const definition = bySubject.get(event.subject);
      if (!definition) return onInvalid(event, new Error(`no definition for ${event.subject}`));
      if (wanted && !(await wanted(event))) return;
      const parsed = definition.schema.safeParse(event.payload);
      if (!parsed.success) return onInvalid(event, parsed.error);
      await handler({ ...event, payload: parsed.data } as TypedEvent<Definition>);
    },
  });
}

function badRequest(subject: string, error: z.ZodError): RemoteError {
  return new RemoteError({
    status: 400,
    type: "bad_request",
    message: `invalid ${subject} request: ${summarise(error)}`,
    errors: toFieldErrors(error),
  });
}

function toFieldErrors(error: z.ZodError): { field: string; message: string }[] {
  return error.issues.map((issue) => ({ field: issue.path.map(String).join("."), message: issue.message }));
}

function summarise(error: z.ZodError): string {
  return toFieldErrors(error)
    .map((e) => (e.field ? `${e.field}: ${e.message}` : e.message))
    .join("; ");
}
