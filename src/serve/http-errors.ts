/**
 * Errors only the HTTP front raises: the request itself is wrong before any runtime sees it.
 * Each has a stable `code` like every omni-runtime error; status.ts maps codes to statuses.
 */
import { OmniError } from '../errors.js';

/** The body is malformed, truncated, unreadable, or its shape does not match the layer. */
export class BadBodyError extends OmniError {
  constructor(message = 'the request body is malformed') {
    super('OMNI_ERR_BAD_BODY', message);
  }
}

/** The body is larger than the server's body limit (the runtime was never asked). */
export class BodyTooLargeError extends OmniError {
  readonly limit: number;
  constructor(limit: number, message?: string) {
    super('OMNI_ERR_BODY_TOO_LARGE', message ?? `the request body exceeds the limit of ${limit} bytes`);
    this.limit = limit;
  }
}

/** The body's Content-Type is neither application/octet-stream nor application/json. */
export class UnsupportedMediaTypeError extends OmniError {
  constructor(
    message = 'send application/octet-stream (float32 LE rows) or application/json ({ "rows": [[...]] })',
  ) {
    super('OMNI_ERR_UNSUPPORTED_MEDIA_TYPE', message);
  }
}

/** No route for this method and path. */
export class NotFoundError extends OmniError {
  constructor(message = 'no such route') {
    super('OMNI_ERR_NOT_FOUND', message);
  }
}

/** The request is not valid HTTP or names no valid resource (framing, URL, header values). */
export class BadRequestError extends OmniError {
  constructor(message = 'the request is malformed') {
    super('OMNI_ERR_BAD_REQUEST', message);
  }
}
