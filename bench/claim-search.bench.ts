/**
 * The claim slot search at 65,536 slots, one claim released and taken again per op:
 * - common: few slots held, the search takes the first it reads;
 * - saturated: every slot held but the one just behind where the search starts (calls ending
 *   out of order): the guided lap reads the 1,024 block counts, then one block of slots;
 * - misled: the same, with that slot's block counted one too high, as a thread terminated
 *   between a release's two steps leaves it for good: the guided lap finds nothing, and the
 *   next reads every slot word up to it.
 * Prints ns per op (ratio against the common case) and the shared loads each search made.
 * Run: npx tsc -p tsconfig.json && node dist/bench/claim-search.bench.js
 */
import { BLOCK_SHIFT, blockCount, blockCountsByteOffset, MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import { BoundedAdmission, type Claim } from '../src/index.js';
import { benchArgs } from './lib/args.js';
import { type BenchCase, measure, printRatios } from './lib/ratios.js';

benchArgs('claim-search.bench', []);

const SLOTS = MAX_CLAIM_SLOTS;

interface Table {
  readonly admission: BoundedAdmission;
  /** The claim taken last: released and taken again by every op. */
  claim: Claim;
}

function claimOne(admission: BoundedAdmission): Claim {
  const permit = admission.tryAdmit();
  if (!permit.ok) throw new Error(`refused: ${permit.reason}`);
  return permit.toClaim();
}

/** `held` slots held; the search's next start is just past the last one taken. */
function table(held: number, misled: boolean): Table {
  const admission = new BoundedAdmission({ requests: SLOTS });
  const claims = Array.from({ length: held }, () => claimOne(admission));
  const claim = claims[held - 1]!;
  if (misled) {
    const counts = new Int32Array(admission.buffer, blockCountsByteOffset(SLOTS), blockCount(SLOTS));
    Atomics.add(counts, claim.slot >> BLOCK_SHIFT, 1); // a release that stopped before uncounting
  }
  return { admission, claim };
}

function cycle(t: Table): () => void {
  return () => {
    t.admission.reclaim(t.claim);
    t.claim = claimOne(t.admission);
  };
}

/**
 * BATCH cycles a call: tinybench's own cost per call (~40 ns, PITFALLS.md) counted in one cycle of
 * the common case (~190 ns) read it ~24 % slow, and the ratios against it that much high.
 */
const BATCH = 100;
function cycles(t: Table): () => void {
  const one = cycle(t);
  return () => {
    for (let i = 0; i < BATCH; i++) one();
  };
}

/** The shared loads one op makes (Atomics.load on the table's buffer). */
function loadsPerOp(t: Table): number {
  const real = Atomics.load;
  let loads = 0;
  Atomics.load = ((array: Int32Array, index: number) => {
    if (array.buffer === t.admission.buffer) loads++;
    return real(array, index);
  }) as typeof Atomics.load;
  try {
    cycle(t)();
  } finally {
    Atomics.load = real;
  }
  return loads;
}

const tables = {
  common: table(16, false),
  saturated: table(SLOTS, false),
  misled: table(SLOTS, true),
};
const common = 'common: 16 of 65,536 held';
const cases: BenchCase[] = [
  { name: common, batch: BATCH, fn: cycles(tables.common) },
  { name: 'saturated: 65,535 held', batch: BATCH, fn: cycles(tables.saturated), baseline: common },
  {
    name: 'misled: 65,535 held, one count too high',
    batch: BATCH,
    fn: cycles(tables.misled),
    baseline: common,
  },
];
printRatios('Claim search, release + claim (ratio = common ns / case ns)', await measure(cases));
for (const [name, t] of Object.entries(tables))
  process.stdout.write(`${name}: ${loadsPerOp(t)} loads per op\n`);
