/**
 * A second thread that hammers the same admission (or the same raw word) until told to stop,
 * so the main thread's pairs are measured under real cross-core contention.
 */
import { workerData } from 'node:worker_threads';
import { BoundedAdmission } from '../src/index.js';

interface ContenderData {
  mode: 'raw' | 'admission';
  target: SharedArrayBuffer;
  control: SharedArrayBuffer;
}

const READY = 0;
const STOP = 1;
/** Batches of 1,000 pairs made so far, so the main thread can count this thread's share. */
const BATCHES = 2;
const { mode, target, control } = workerData as ContenderData;
const ctl = new Int32Array(control);
const raw = new Int32Array(target, 0, 1);
const admission = mode === 'admission' ? BoundedAdmission.attach(target) : undefined;

Atomics.store(ctl, READY, 1);
Atomics.notify(ctl, READY);
while (Atomics.load(ctl, STOP) === 0) {
  for (let i = 0; i < 1000; i++) {
    if (admission) {
      const p = admission.tryAdmit(1);
      if (p.ok) p.release();
    } else {
      // Retry a lost race, as tryAdmit does, so both modes hammer the word with the same work.
      for (;;) {
        const c = Atomics.load(raw, 0);
        if (c >= 1 << 20) break;
        if (Atomics.compareExchange(raw, 0, c, c + 1) === c) {
          Atomics.sub(raw, 0, 1);
          break;
        }
      }
    }
  }
  Atomics.add(ctl, BATCHES, 1);
}
