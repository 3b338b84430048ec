/**
 * The built-in worker: y = GELU(x W^T + b) through the native library. Each thread loads the
 * library once, opens its own context on the chosen device and uploads the weights at start;
 * every task then runs on the resident weights and returns its output transferred.
 */
import { defineWorker } from '../src/define-worker.js';
import { InvalidArgumentError } from '../src/errors.js';
import type { NativeWorkerData, NativeWorkerInput } from '../src/linear/protocol.js';
import { FixtureFaults, loadNativeLibrary, NativeContext } from '../src/native/index.js';

let context: NativeContext | undefined;
let faults: FixtureFaults | undefined;

function init(data: unknown): void {
  const config = data as NativeWorkerData;
  const library = loadNativeLibrary(config.backend, config.libraryPath ? { path: config.libraryPath } : {});
  const opened = NativeContext.open(library, {
    device: config.device,
    ...(config.workspaceCount !== undefined ? { workspaceCount: config.workspaceCount } : {}),
    ...(config.workspaceBytes !== undefined ? { workspaceBytes: config.workspaceBytes } : {}),
  });
  // Everything that can throw once the context is open stays inside the try: a thread whose
  // init threw never runs its close hook, so the context would otherwise leak.
  try {
    const { w, b, outFeatures, inFeatures } = config.weights;
    opened.uploadWeights(w, b, outFeatures, inFeatures);
    if (config.faultInjection === true && config.backend === 'fixture') faults = new FixtureFaults(library);
  } catch (err) {
    opened.close();
    throw err;
  }
  context = opened;
}

export default defineWorker(
  (input: NativeWorkerInput, ctx) => {
    const native = context!;
    if ('stats' in input) return native.stats();
    if ('inject' in input) {
      if (!faults) throw new InvalidArgumentError('fault injection is not enabled for this runtime');
      if (input.inject === 'fatal') faults.injectFatal(native);
      else if (input.inject === 'copy') faults.failCopyAfter(native, input.after ?? 1);
      else faults.failAllocAfter(input.after ?? 0);
      return null;
    }
    const y = native.linearGelu(input.x, input.rows);
    ctx.transfer(y.buffer as ArrayBuffer);
    return y;
  },
  {
    init,
    // Frees the context (device memory, pinned staging, stream) before the thread is terminated.
    close: () => {
      context?.close();
      context = undefined;
    },
  },
);
