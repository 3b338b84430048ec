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
export * from './errors.js';
export {
  type LinearRunOptions,
  LinearRuntime,
  type LinearRuntimeOptions,
  type NativeLibraryPaths,
  seededWeights,
} from './linear/linear-runtime.js';
export type { LinearWeights } from './linear/protocol.js';
export {
  type BackendName,
  type BackendPreference,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  NativeContext,
  type NativeStats,
  NativeStatus,
  resolveDevice,
  selectBackend,
} from './native/index.js';
export type { RunOptions, RuntimeAdmissionOptions, RuntimeOptions } from './runtime/options.js';
export {
  type CloseOptions,
  type CloseResult,
  type LatencySummary,
  Runtime,
  type RuntimeReport,
  type RuntimeState,
} from './runtime.js';
export { fromWire, toWire, type WireError, type WireFields } from './wire-error.js';
