/**
 * The built-in worker: y = GELU(x W^T + b) through the native library. Each thread loads the
 * library once, opens its own context on the chosen device and uploads the weights at start;
 * every task then runs on the resident weights and returns its output transferred. The context
 * is recorded in the runtime's ledger (NativeWorkerData.contexts), so that the main thread can
 * close it if this thread ends without its close hook.
 */
import { threadId } from 'node:worker_threads';
import { defineWorker } from '../src/define-worker.js';
import { describeValue, InvalidArgumentError } from '../src/errors.js';
import { FAULT_KINDS, type NativeWorkerData, type NativeWorkerInput } from '../src/linear/protocol.js';
import { ContextLedger } from '../src/native/context-ledger.js';
import { FixtureFaults, kRawHandle, loadNativeLibrary, NativeContext } from '../src/native/index.js';

let context: NativeContext | undefined;
let faults: FixtureFaults | undefined;
/** The context's entry in the ledger: its slot (-1: not recorded) and address. */
let ledger: ContextLedger | undefined;
let slot = -1;
let address = 0n;

/**
 * Closes the context, unless the main thread has taken its entry (it closes it then). Taken
 * first: a thread ended between the two loses the context, as one without a ledger would, but
 * nobody ever closes it twice.
 */
function release(opened: NativeContext): void {
  const mine = slot === -1 || ledger!.take(slot, address);
  slot = -1;
  if (mine) opened.close();
}

function init(data: unknown): void {
  const config = data as NativeWorkerData;
  const library = loadNativeLibrary(config.backend, config.libraryPath ? { path: config.libraryPath } : {});
  const opened = NativeContext.open(library, {
    device: config.device,
    ...(config.workspaceCount !== undefined ? { workspaceCount: config.workspaceCount } : {}),
    ...(config.workspaceBytes !== undefined ? { workspaceBytes: config.workspaceBytes } : {}),
  });
  // koffi 3 hands pointers out as BigInt addresses, which the main thread's omni_close takes.
  const raw = opened[kRawHandle];
  if (config.contexts !== undefined && typeof raw === 'bigint') {
    ledger = ContextLedger.attach(config.contexts);
    address = raw;
    slot = ledger.record(threadId, raw);
  }
  // Everything that can throw once the context is open stays inside the try: a thread whose
  // init threw never runs its close hook, so the context would otherwise leak.
  try {
    const { w, b, outFeatures, inFeatures } = config.weights;
    opened.uploadWeights(w, b, outFeatures, inFeatures);
    if (config.faultInjection === true && config.backend === 'fixture') faults = new FixtureFaults(library);
  } catch (err) {
    release(opened);
    throw err;
  }
  context = opened;
}

export default defineWorker(
  (input: NativeWorkerInput, ctx) => {
    const native = context!;
    // `lr.runtime.run` is public: a caller's null or number reached `in` below as a TypeError,
    // and came back uncoded (OMNI_ERR_TASK_FAILED) where `{}` is a coded refusal.
    if (typeof input !== 'object' || input === null) {
      throw new InvalidArgumentError('a linear call takes an object: { x, rows }, { stats } or { inject }');
    }
    // One kind per message, stats only as `stats: true`: any `stats` key answered the counters,
    // so { x, rows, stats: false } got them instead of its rows, and an inject beside it was lost.
    const kinds = Number('stats' in input) + Number('inject' in input) + Number('x' in input);
    if (kinds > 1)
      throw new InvalidArgumentError('a linear call takes one of x, stats or inject, not several');
    if ('stats' in input) {
      if (input.stats !== true) {
        throw new InvalidArgumentError(`stats must be true, got ${describeValue(input.stats)}`);
      }
      return native.stats();
    }
    if ('inject' in input) {
      if (!faults) throw new InvalidArgumentError('fault injection is not enabled for this runtime');
      // Only undefined takes the default: a null `after` armed the next copy or sync, and the
      // hooks refuse it, coded. Fatal poisons now, so an `after` asking for later is refused.
      const { after } = input;
      // A kind this worker does not know is refused: taken as 'alloc', it armed the wrong fault.
      switch (input.inject) {
        case 'fatal':
          if (after !== undefined) {
            throw new InvalidArgumentError(`inject 'fatal' takes no after, got ${describeValue(after)}`);
          }
          faults.injectFatal(native);
          break;
        // Their default `after` (1) is the hooks' own, which only undefined takes.
        case 'copy':
          faults.failCopyAfter(native, after);
          break;
        case 'sync':
          faults.failSyncAfter(native, after);
          break;
        case 'alloc':
          faults.failAllocAfter(after === undefined ? 0 : after);
          break;
        default:
          throw new InvalidArgumentError(
            `inject must be one of ${FAULT_KINDS.join(', ')}, got ${describeValue(input.inject)}`,
          );
      }
      return null;
    }
    const y = native.linearGelu(input.x, input.rows);
    ctx.transfer(y.buffer);
    return y;
  },
  {
    init,
    // Frees the context (device memory, pinned staging, stream) before the thread is terminated.
    close: () => {
      if (context) release(context);
      context = undefined;
    },
  },
);
