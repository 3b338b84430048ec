/**
 * What the main thread's reclaim after a normal reply costs: the worker has released the claim
 * already, so it finds the claim spent. Measured against the claim's own round trip (admit,
 * toClaim, the worker's release) in one process, interleaved (bench/lib/ratios.ts).
 * Run: npx tsc -p tsconfig.json && node dist/bench/claim-reclaim.bench.js
 */
import { BoundedAdmission } from '../src/index.js';
import { benchArgs } from './lib/args.js';
import { type BenchCase, measure, printRatios } from './lib/ratios.js';

benchArgs('claim-reclaim.bench', []);

const BATCH = 1000;
const admission = new BoundedAdmission({ requests: 64 });

function cycle(): void {
  for (let i = 0; i < BATCH; i++) {
    const permit = admission.tryAdmit();
    if (!permit.ok) throw new Error('refused');
    admission.reclaim(permit.toClaim());
  }
}

function cycleAndSpent(): void {
  for (let i = 0; i < BATCH; i++) {
    const permit = admission.tryAdmit();
    if (!permit.ok) throw new Error('refused');
    const claim = permit.toClaim();
    admission.reclaim(claim);
    if (admission.reclaim(claim)) throw new Error('a spent claim was reclaimed');
  }
}

const spent = (() => {
  const permit = admission.tryAdmit();
  if (!permit.ok) throw new Error('refused');
  const claim = permit.toClaim();
  admission.reclaim(claim);
  return claim;
})();

function spentOnly(): void {
  for (let i = 0; i < BATCH; i++)
    if (admission.reclaim(spent)) throw new Error('a spent claim was reclaimed');
}

const cases: BenchCase[] = [
  { name: 'claim round trip (admit, toClaim, release)', batch: BATCH, fn: cycle },
  {
    name: 'round trip + the reclaim of the spent claim',
    batch: BATCH,
    fn: cycleAndSpent,
    baseline: 'claim round trip (admit, toClaim, release)',
  },
  {
    name: 'reclaim of a spent claim alone',
    batch: BATCH,
    fn: spentOnly,
    baseline: 'claim round trip (admit, toClaim, release)',
  },
];
printRatios('Reclaim after a normal reply (ratio = baseline ns / case ns)', await measure(cases));
if (admission.report().depth !== 0) throw new Error('bench leaked capacity');
