/**
 * One contending thread of `omni-runtime bench admission`: after the READY/GO handshake it
 * loops admit/release pairs (BoundedAdmission, or the raw Atomics baseline) until STOP, then
 * writes how many it did.
 */
import { workerData } from 'node:worker_threads';
import { BoundedAdmission } from '../admission/index.js';
import {
  BATCH,
  BENCH_REQUESTS,
  type ContenderData,
  DONE,
  GO,
  RAW64_LIMIT,
  READY,
  STOP,
} from './admission-bench-protocol.js';

const data = workerData as ContenderData;
const ctl = new Int32Array(data.control);
const results = new Float64Array(data.results);
let refused = 0;

function batchFor(): () => void {
  if (data.mode === 'raw32') {
    const raw = new Int32Array(data.target, 0, 1);
    return () => {
      for (let i = 0; i < BATCH; i++) {
        // Retry a lost race, as tryAdmit does: every counted pair really admitted and released.
        for (;;) {
          const c = Atomics.load(raw, 0);
          if (c >= BENCH_REQUESTS) {
            refused++;
            break;
          }
          if (Atomics.compareExchange(raw, 0, c, c + 1) === c) {
            Atomics.sub(raw, 0, 1);
            break;
          }
        }
      }
    };
  }
  if (data.mode === 'raw64') {
    const raw = new BigUint64Array(data.target, 0, 1);
    const cost = BigInt(data.cost);
    return () => {
      for (let i = 0; i < BATCH; i++) {
        for (;;) {
          const c = Atomics.load(raw, 0);
          if (c >= RAW64_LIMIT) {
            refused++;
            break;
          }
          if (Atomics.compareExchange(raw, 0, c, c + cost) === c) {
            Atomics.sub(raw, 0, cost);
            break;
          }
        }
      }
    };
  }
  const admission = BoundedAdmission.attach(data.target);
  const cost = data.cost === 0 ? undefined : data.cost;
  return () => {
    for (let i = 0; i < BATCH; i++) {
      const p = admission.tryAdmit(cost);
      if (p.ok) p.release();
      else refused++;
    }
  };
}

const batch = batchFor();
batch(); // warm the loop up before timing starts
// Handshake: count in, then sleep until the main thread flips GO.
Atomics.add(ctl, READY, 1);
Atomics.notify(ctl, READY);
Atomics.wait(ctl, GO, 0);
// One batch at least: a thread the OS did not run between GO and STOP (a busy machine, a short
// round) would otherwise count nothing, and the round would report 0 pairs/s.
let pairs = 0;
do {
  batch();
  pairs += BATCH;
} while (Atomics.load(ctl, STOP) === 0);
results[2 * data.index] = pairs;
results[2 * data.index + 1] = refused;
// Release order: the counts are written before DONE, so the main thread reads them complete.
Atomics.add(ctl, DONE, 1);
Atomics.notify(ctl, DONE);
