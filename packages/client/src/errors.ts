import type { components } from "./generated/openapi.ts";

type Schemas = components["schemas"];

/** The body of any non-2xx answer: `{code, type, message}`, with `errors` on a 422. */
export type ApiErrorBody = Schemas["Error"] | Schemas["ValidationError"] | Schemas["OAuthError"];

/** The closed list of error `type`s (the Error schema's enum). */
export type ApiErrorType = NonNullable<Schemas["Error"]["type"]>;

/**
 * A non-2xx answer of the API, thrown by `unwrap` and by the client's token fetch. `type` and
 * `status` say what went wrong; `fieldErrors` name the fields of a 422; `requestId` is the
 * `X-Request-Id` to quote when asking the operator about it.
 */
export class CheeseApiError extends Error {
  override readonly name = "CheeseApiError";
  readonly status: number;
  readonly type: ApiErrorType | (string & {}) | undefined;
  readonly body: ApiErrorBody | undefined;
  readonly requestId: string | undefined;
  /** Seconds to wait before trying again (429, 503), from Retry-After. */
  readonly retryAfter: number | undefined;

  constructor(response: Response, body: unknown) {
    const parsed = isErrorBody(body) ? body : undefined;
    super(parsed?.message ?? `HTTP ${response.status}`);
    this.status = response.status;
    this.body = parsed;
    this.type = parsed?.type;
    this.requestId = response.headers.get("x-request-id") ?? undefined;
    const retryAfter = Number(response.headers.get("retry-after"));
    this.retryAfter = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined;
  }

  /** The fields a 422 names, with what is wrong with each. */
  get fieldErrors(): { field: string; message: string }[] {
    return this.body && "errors" in this.body ? this.body.errors : [];
  }

  /** RFC 6749's error code, on answers of the authorization server (`invalid_client`, ...). */
  get oauthError(): string | undefined {
    return this.body && "error" in this.body ? this.body.error : undefined;
  }
}

function isErrorBody(body: unknown): body is ApiErrorBody {
  return (
    typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string"
  );
}

/** What every openapi-fetch call answers. */
type Result<T> =
  | { data: T; error?: never; response: Response }
  | { data?: never; error: unknown; response: Response };

/** The body of a 2xx answer; `undefined` for operations that answer without one (204). */
export type Unwrapped<T> = [Exclude<T, undefined>] extends [never] ? undefined : Exclude<T, undefined>;

/**
 * The data of a call, or a `CheeseApiError` thrown for any answer outside 2xx (a 304 to a
 * conditional GET included: read `response` yourself when you send If-None-Match):
 * `const cheese = await unwrap(client.GET("/cheeses/{cheeseId}", { params: { path: { cheeseId: 42 } } }))`.
 */
export async function unwrap<T>(call: Result<T> | Promise<Result<T>>): Promise<Unwrapped<T>> {
  const result = await call;
  if (result.error !== undefined || !result.response.ok) {
    throw new CheeseApiError(result.response, result.error);
  }
  return result.data as Unwrapped<T>;
}
