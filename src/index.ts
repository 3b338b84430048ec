export {
  type AdmissionBounds,
  type AdmissionReport,
  type AdmitOptions,
  BoundedAdmission,
  type Claim,
  type Permit,
  type Refusal,
} from './admission/index.js';
export {
  defineWorker,
  type TaskContext,
  type WorkerDefinition,
  type WorkerHandler,
  type WorkerOptions,
} from './define-worker.js';
export {
  AbiMismatchError,
  AbortError,
  BadBodyError,
  BadRequestError,
  BodyTooLargeError,
  ClaimsExhaustedError,
  ClosedError,
  DeadlineError,
  hasCode,
  InvalidArgumentError,
  InvalidBoundError,
  InvalidClaimError,
  InvalidCostError,
  LibraryNotFoundError,
  MethodNotAllowedError,
  NativeError,
  NotFoundError,
  NotImplementedError,
  OmniError,
  type OmniErrorCode,
  PermitMovedError,
  PermitReleasedError,
  type RefusalReason,
  type RefusalSnapshot,
  RejectedError,
  TaskFailedError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
  UnsupportedMediaTypeError,
  WorkerExitedError,
} from './errors.js';
export { type LinearRunOptions, LinearRuntime } from './linear/linear-runtime.js';
export type { LinearWeights } from './linear/protocol.js';
export type { LinearRuntimeOptions, NativeLibraryPaths } from './linear/start-options.js';
export { seededWeights } from './linear/weights.js';
export {
  type BackendChoice,
  type BackendName,
  type BackendPreference,
  type LoadOptions,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  NativeContext,
  type NativeLibrary,
  type NativeOpenOptions,
  type NativeStats,
  NativeStatus,
  type RawFixtureApi,
  type RawHandle,
  type RawNativeApi,
  type RawOpenOptions,
  resolveDevice,
  type SelectOptions,
  selectBackend,
} from './native/index.js';
export type { RunOptions, RuntimeAdmissionOptions, RuntimeOptions } from './runtime/options.js';
export type { ThreadEnds } from './runtime/thread-ends.js';
export {
  type CloseOptions,
  type CloseResult,
  type LatencySummary,
  Runtime,
  type RuntimeReport,
  type RuntimeState,
} from './runtime.js';
export { fromWire, toWire, type WireError, type WireFields } from './wire-error.js';
