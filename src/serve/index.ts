export {
  BadBodyError,
  BadRequestError,
  BodyTooLargeError,
  MethodNotAllowedError,
  NotFoundError,
  NotImplementedError,
  UnsupportedMediaTypeError,
} from '../errors.js';
export { type BodyEncoding, OCTET_STREAM, ROWS_HEADER } from './body.js';
export type { DrainOptions, DrainResult, ServerState } from './drain.js';
export { HEALTH_PATH, type HealthBody } from './health-route.js';
export { DEADLINE_HEADER, LINEAR_PATH } from './linear-route.js';
export { type MetricsSource, ServeMetrics } from './metrics.js';
export { METRICS_PATH } from './metrics-route.js';
export { DEFAULT_REQUEST_TIMEOUT_MS } from './request-timeout.js';
export { DEFAULT_SEND_TIMEOUT_MS } from './send-timeout.js';
export { DEFAULT_BODY_LIMIT, DEFAULT_DRAIN_TIMEOUT_MS, type ServeOptions } from './serve-options.js';
export type { Served } from './served.js';
export { type ServeHandle, serve } from './server.js';
export { answerFor, type ErrorBody, type HttpAnswer, statusFor } from './status.js';
