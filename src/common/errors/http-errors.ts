/**
 * The one error family of both programs. Every 4xx/5xx body is
 * `{ id, name, message }` (spec 2.8), produced by the error middleware from these classes.
 */
export type ErrorKind =
  | 'ValidationError'
  | 'AuthenticationRequired'
  | 'NoAccessError'
  | 'NotFoundError'
  | 'NameExistsError'
  | 'PayloadTooLarge'
  | 'ContentTypeError'
  | 'TooManyRequests'
  | 'InternalError'
  | 'EndpointDisabled'
  | 'NotReady';

export abstract class HttpError extends Error {
  abstract readonly status: number;
  abstract readonly kind: ErrorKind;
}

function errorClass(kind: ErrorKind, status: number) {
  return class extends HttpError {
    readonly status = status;
    readonly kind = kind;
  };
}

export class ValidationError extends errorClass('ValidationError', 400) {}
export class AuthenticationRequired extends errorClass('AuthenticationRequired', 401) {}
export class NoAccessError extends errorClass('NoAccessError', 403) {}
export class NotFoundError extends errorClass('NotFoundError', 404) {}
export class NameExistsError extends errorClass('NameExistsError', 409) {}
export class PayloadTooLarge extends errorClass('PayloadTooLarge', 413) {}
export class ContentTypeError extends errorClass('ContentTypeError', 415) {}
/** A caller past its budget; sent with `Retry-After`. */
export class TooManyRequests extends errorClass('TooManyRequests', 429) {}
export class InternalError extends errorClass('InternalError', 500) {}
export class EndpointDisabled extends errorClass('EndpointDisabled', 501) {}
export class NotReady extends errorClass('NotReady', 503) {}

/** The JSON body of every error response. */
export interface ErrorBody {
  id: string;
  name: ErrorKind;
  message: string;
}
