export type { NativeStats, NativeStatusCode } from './abi.js';
export {
  ABI_VERSION,
  DEFAULT_WORKSPACE_BYTES,
  DEFAULT_WORKSPACE_COUNT,
  MAX_FEATURES,
  MAX_ROWS,
  MAX_WORKSPACE_COUNT,
  NativeStatus,
} from './abi.js';
export type { BackendChoice, BackendPreference, SelectOptions } from './backend.js';
export { BACKEND_ENV, selectBackend } from './backend.js';
export type { RawFixtureApi, RawHandle, RawNativeApi, RawOpenOptions } from './bindings.js';
export type { NativeOpenOptions } from './context.js';
export { kRawHandle, NativeContext } from './context.js';
export { DEVICE_ENV, resolveDevice } from './device.js';
export { FixtureFaults } from './faults.js';
export type { BackendName, LoadOptions, NativeLibrary } from './library.js';
export { defaultLibraryPath, loadNativeLibrary } from './library.js';
export { erf, gelu, referenceLinearGelu, seededFloats } from './reference.js';
