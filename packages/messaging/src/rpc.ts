/**
 * Typed, validated RPC and integration events on top of a {@link MessageBus}. Definitions live
 * once in `@cheese/contracts`. A request is checked once, by the server that serves it
 * (`serveRpc`, which trusts no caller: 400 listing the issues); a reply once, by the server that
 * makes it, which sends what it checked: unknown fields dropped, defaults and transforms applied.
 * The caller takes it as it comes.
 */
import { z } from "zod";
import { CheckedText } from "./json.ts";
import {
  type Closable,
  type ConsumeOptions,
  type Consumer,
  type DeliveredEvent,
  type Headers,
  type MessageBus,
  PassedReply,
  RemoteError,
} from "./port.ts";

export { CheckedText };

/**
 * A reply its caller passes on without decoding it (the gateway's answer to a read or a create):
 * `body` is the field of the response that becomes the caller's body, or "." for the whole
 * response, sent as JSON text; `meta` the fields the caller reads; `bodyMeta` fields of the body
 * (an object field, not ".") the caller reads too, sent beside `meta` under their own names (a
 * create's id, for its `Location`). The body itself is never given as a checked text then.
 */
export interface PassThrough<Field extends string = string> {
  body: Field | ".";
  meta: readonly Field[];
  bodyMeta?: readonly string[];
}

export interface RpcDefinition<
  Request extends z.ZodType = z.ZodType,
  Response extends z.ZodType = z.ZodType,
> {
  /** `<service>.<aggregate>.<verb>`, served with queue group `<service>`. */
  subject: string;
  request: Request;
  response: Response;
  passThrough?: PassThrough;
}

export function defineRpc<
  Request extends z.ZodType,
  Response extends z.ZodType,
  const Passed extends PassThrough<keyof z.output<Response> & string> | undefined = undefined,
>(
  definition: RpcDefinition<Request, Response> & { passThrough?: Passed },
): RpcDefinition<Request, Response> & { passThrough: Passed } {
  return definition as RpcDefinition<Request, Response> & { passThrough: Passed };
}

/**
 * The JSON texts of a list's items, each checked against the item schema by this server when it
 * was made ({@link checkedJson}), typically once per version of a document and kept: a handler
 * returns it in place of the array in the field a definition passes through (`passThrough.body`,
 * or any top-level field when the whole reply is passed through), and `serveRpc` checks the rest
 * of the reply and joins these texts as the list, instead of checking and encoding every item
 * again on every reply.
 */
export class CheckedTexts {
  constructor(readonly texts: readonly string[]) {}
}

/**
 * A handler's result: its response, where a passed-through array may be {@link CheckedTexts} and
 * a passed-through body a {@link CheckedText}.
 */
export type ServedResult<T> = T extends object
  ? {
      [K in keyof T]: NonNullable<T[K]> extends readonly unknown[]
        ? T[K] | CheckedTexts
        : NonNullable<T[K]> extends object
          ? T[K] | CheckedText
          : T[K];
    }
  : T;

/**
 * The JSON text of `value` as `schema` outputs it, for {@link CheckedTexts} and
 * {@link CheckedText}; a value breaking the
 * schema is a bug of the server making it, so it throws (the caller gets a plain 500).
 */
export function checkedJson<Schema extends z.ZodType>(schema: Schema, value: z.input<Schema>): string {
  const checked = schema.safeParse(value);
  if (!checked.success) throw new Error(`a value broke its schema: ${summarise(checked.error)}`);
  return JSON.stringify(checked.data);
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
 * Sends the request as given, unchecked: its server checks it (an invalid one is its 400) and
 * runs its transforms, once; what the gateway sends is made of what its route already checked.
 * The reply is the one the server checked against the response schema (`serveRpc`); a
 * passed-through reply is joined back into the whole response.
 */
export async function callRpc<Request extends z.ZodType, Response extends z.ZodType>(
  bus: MessageBus,
  definition: RpcDefinition<Request, Response>,
  payload: z.input<Request>,
  options: CallOptions,
): Promise<z.output<Response>> {
  const reply = await bus.request(definition.subject, payload, options);
  if (!(reply instanceof PassedReply)) return reply as z.output<Response>;
  const body: unknown = JSON.parse(typeof reply.body === "string" ? reply.body : decoder.decode(reply.body));
  const field = definition.passThrough?.body ?? ".";
  if (field === ".") return body as z.output<Response>;
  const joined: Record<string, unknown> = { ...(reply.meta as object), [field]: body };
  for (const name of definition.passThrough?.bodyMeta ?? []) delete joined[name];
  return joined as z.output<Response>;
}

/** The fields `bodyMeta` names of a reply's body field: what a caller reads of it beside `meta`. */
export type BodyMetaOf<Output, Field extends string, BodyMeta extends string> = Field extends keyof Output
  ? Pick<NonNullable<Output[Field]>, BodyMeta & keyof NonNullable<Output[Field]>>
  : unknown;

/**
 * Calls a definition with `passThrough`: its body as the JSON text the server encoded (never
 * decoded here), and the fields of `meta` (with those of `bodyMeta`).
 */
export async function callRpcPassing<
  Request extends z.ZodType,
  Response extends z.ZodType,
  Field extends string,
  Meta extends keyof z.output<Response> & string,
  BodyMeta extends string = never,
>(
  bus: MessageBus,
  definition: RpcDefinition<Request, Response> & {
    passThrough: { body: Field; meta: readonly Meta[]; bodyMeta?: readonly BodyMeta[] };
  },
  payload: z.input<Request>,
  options: CallOptions,
): Promise<{
  meta: Pick<z.output<Response>, Meta> & BodyMetaOf<z.output<Response>, Field, BodyMeta>;
  body: string | Uint8Array;
}> {
  type Meta_ = Pick<z.output<Response>, Meta> & BodyMetaOf<z.output<Response>, Field, BodyMeta>;
  const reply = await bus.request(definition.subject, payload, options);
  if (reply instanceof PassedReply) return { meta: reply.meta as Meta_, body: reply.body };
  // A server that does not pass its replies through (an older version during a rolling update).
  const split = passedReply(definition.passThrough, reply);
  return { meta: split.meta as Meta_, body: split.body };
}

const decoder = new TextDecoder();

/**
 * Serves a definition: invalid payloads get 400 bad_request listing the issues; a handler result
 * that breaks the response schema is a bug, so the bus logs it and replies a plain 500. What is
 * sent is the checked result (zod's output), passed through when the definition says so.
 */
export function serveRpc<Request extends z.ZodType, Response extends z.ZodType>(
  bus: MessageBus,
  definition: RpcDefinition<Request, Response>,
  options: { queue: string },
  handler: (payload: z.output<Request>, context: RpcContext) => Promise<ServedResult<z.input<Response>>>,
): Closable {
  const { passThrough } = definition;
  /** The response schema without the body field: what checks a reply whose body is a CheckedText. */
  let withoutBody: z.ZodType | undefined;
  const responseWithoutBody = (subject: string): z.ZodType => {
    if (withoutBody) return withoutBody;
    const { response } = definition;
    if (!passThrough || passThrough.body === "." || !(response instanceof z.ZodObject))
      throw new Error(`handler of ${subject} gave a checked text outside a passed-through body field`);
    // A field named at run time, so not one of the keys zod's types list.
    withoutBody = response.omit({ [passThrough.body]: true } as never);
    return withoutBody;
  };
  return bus.serve(definition.subject, options, async ({ subject, payload, headers }) => {
    const request = definition.request.safeParse(payload);
    if (!request.success) throw badRequest(subject, request.error);
    const result = await handler(request.data, { subject, headers });
    const { rest, texts, text } = splitChecked(result);
    const response = (text ? responseWithoutBody(subject) : definition.response).safeParse(rest);
    if (!response.success) {
      throw new Error(`handler of ${subject} broke the response schema: ${summarise(response.error)}`);
    }
    if (!passThrough) {
      if (texts) throw new Error(`handler of ${subject} gave checked texts to a reply not passed through`);
      return response.data;
    }
    return passedReply(passThrough, response.data, texts, text);
  });
}

/**
 * The result with each {@link CheckedTexts} field replaced by an empty array (what the schema then
 * checks in its place: the items were checked when their texts were made), and those texts; a
 * {@link CheckedText} field left out (the schema without it checks the rest), and that text.
 */
function splitChecked(result: unknown): {
  rest: unknown;
  texts?: Map<string, CheckedTexts>;
  text?: { field: string; checked: CheckedText };
} {
  if (typeof result !== "object" || result === null) return { rest: result };
  let texts: Map<string, CheckedTexts> | undefined;
  let text: { field: string; checked: CheckedText } | undefined;
  for (const [field, value] of Object.entries(result)) {
    if (value instanceof CheckedText) {
      if (text) throw new Error(`checked texts in two fields, ${text.field} and ${field}`);
      text = { field, checked: value };
    } else if (value instanceof CheckedTexts) {
      texts ??= new Map();
      texts.set(field, value);
    }
  }
  if (!texts && !text) return { rest: result };
  const rest: Record<string, unknown> = { ...result };
  for (const field of texts?.keys() ?? []) rest[field] = [];
  if (text) delete rest[text.field];
  return { rest, ...(texts ? { texts } : {}), ...(text ? { text } : {}) };
}

/**
 * A reply as `passThrough` splits it: the fields of `meta`, and the body as JSON text. Checked
 * texts, where the handler gave some, are joined in unparsed in place of their arrays; a checked
 * text is the body as it is.
 */
function passedReply(
  passThrough: PassThrough,
  data: unknown,
  texts?: Map<string, CheckedTexts>,
  text?: { field: string; checked: CheckedText },
): PassedReply {
  const fields = data as Record<string, unknown>;
  const meta: Record<string, unknown> = {};
  for (const name of passThrough.meta) {
    if (texts?.has(name)) throw new Error(`checked texts in the meta field ${name}`);
    meta[name] = fields[name];
  }
  if (passThrough.bodyMeta) {
    const body = text ? text.checked.fields : (fields[passThrough.body] as Record<string, unknown>);
    if (!body || texts || passThrough.body === ".")
      throw new Error(
        `bodyMeta needs the body field ${passThrough.body} as a value, or its fields beside its text`,
      );
    for (const name of passThrough.bodyMeta) meta[name] = body[name];
  }
  if (text) {
    if (texts || text.field !== passThrough.body)
      throw new Error(`checked text outside the body field ${passThrough.body}`);
    return new PassedReply(meta, text.checked.text);
  }
  if (!texts) {
    return new PassedReply(meta, JSON.stringify(passThrough.body === "." ? data : fields[passThrough.body]));
  }
  const list = (checked: CheckedTexts) => `[${checked.texts.join(",")}]`;
  if (passThrough.body !== ".") {
    const body = texts.get(passThrough.body);
    if (!body || texts.size > 1) throw new Error(`checked texts outside the body field ${passThrough.body}`);
    return new PassedReply(meta, list(body));
  }
  // Field by field in the order of zod's output, as JSON.stringify would write it.
  const members: string[] = [];
  for (const [name, value] of Object.entries(fields)) {
    const checked = texts.get(name);
    if (checked) members.push(`${JSON.stringify(name)}:${list(checked)}`);
    else if (value !== undefined) members.push(`${JSON.stringify(name)}:${JSON.stringify(value)}`);
  }
  return new PassedReply(meta, `{${members.join(",")}}`);
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
   * reaching the handler (acked as a handled one is: see `ConsumeOptions.handler`). For a consumer that needs only some of its events at a time (the
   * notification service, events no webhook subscribes to), so that those cost no parsing.
   */
  wanted?: (event: DeliveredEvent) => boolean | Promise<boolean>;
}

export function consumeEvents<Definition extends EventDefinition>(
  bus: MessageBus,
  options: ConsumeEventsOptions<Definition>,
): Consumer {
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
