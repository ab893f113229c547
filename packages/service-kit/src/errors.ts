import { RemoteError, type RemoteErrorBody } from "@cheese/messaging";

type FieldError = NonNullable<RemoteErrorBody["errors"]>[number];

/**
 * A refusal with the HTTP status and error type the caller will see. Raise it through the named
 * constructors below, so a status and its type are written once.
 */
export class DomainError extends RemoteError {
  constructor(status: number, type: string, message: string, errors?: FieldError[]) {
    super(errors ? { status, type, message, errors } : { status, type, message });
  }
}

export const badRequest = (message: string) => new DomainError(400, "bad_request", message);
export const unauthorized = (message: string) => new DomainError(401, "unauthorized", message);
export const forbidden = (message: string) => new DomainError(403, "forbidden", message);
export const notFound = (message: string) => new DomainError(404, "not_found", message);
export const conflict = (message: string) => new DomainError(409, "conflict", message);
export const preconditionFailed = (message: string) => new DomainError(412, "precondition_failed", message);
export const payloadTooLarge = (message: string) => new DomainError(413, "payload_too_large", message);
export const unsupportedMediaType = (message: string) =>
  new DomainError(415, "unsupported_media_type", message);
export const validationFailed = (message: string, errors: FieldError[]) =>
  new DomainError(422, "validation_error", message, errors);
export const unavailable = (message: string) => new DomainError(503, "service_unavailable", message);

/** Whether `error` is a refusal with this status (say, 409 from a reservation). */
export const isRefusal = (error: unknown, status: number): error is DomainError =>
  error instanceof DomainError && error.body.status === status;
