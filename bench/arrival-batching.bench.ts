/**
 * What the main job's timer ticks do to its bounded refusals. Node fires timers on whole
 * milliseconds, so the open-loop generator (src/cli/load-generator.ts) sends, at each tick, every
 * arrival due by then and SEND_AHEAD_MS ahead: back to back, where a Poisson process spaces them.
 * The first of a batch can take the room the next ones would have found, had each come at its
 * due time, after a call ended in between: the bench then refuses more than the bound would.
 *
 * The runtime here is a stand-in, a FIFO queue in wall-clock time: `servers` calls run at once,
 * each for `fixed + rows x perRow` ms, and at most `bound` are in it (running or queued), as a
 * bounded runtime's depth. openLoop drives it as the main job drives a runtime; the same seeded
 * arrivals are then offered to a fresh queue each at its due time. The gap between the two
 * refusal shares is the generator's, not the runtime's. The first rows are the main job's setting
 * on 2 vCPUs (bound 16, 2 threads, calls of ~1.4 ms); then shorter bounds and shorter calls.
 * Run: npx tsc -p tsconfig.json && node dist/bench/arrival-batching.bench.js
 */
import { openLoop } from '../src/cli/load-generator.js';
import { PhaseRecorder } from '../src/cli/phase-recorder.js';
import { ArrivalProcess } from '../src/cli/prng.js';
import { RejectedError } from '../src/errors.js';
import type { LinearRuntime } from '../src/linear/linear-runtime.js';
import { benchArgs } from './lib/args.js';

benchArgs('arrival-batching.bench', []);

interface Setting {
  readonly bound: number;
  readonly servers: number;
  readonly fixedMs: number;
  readonly perRowMs: number;
  readonly maxRows: number;
  readonly rate: number;
}

const WINDOW_MS = 2000;
const SEED = 7;

/** Admits a call at `now` (ms) if fewer than `bound` are in the queue, and queues it FIFO. */
function queue({ bound, servers, fixedMs, perRowMs }: Setting): (now: number, rows: number) => boolean {
  const free = new Array<number>(servers).fill(0);
  const ends: number[] = [];
  return (now, rows) => {
    while (ends.length > 0 && ends[0]! <= now) ends.shift();
    if (ends.length >= bound) return false;
    free.sort((a, b) => a - b);
    const end = Math.max(now, free[0]!) + fixedMs + rows * perRowMs;
    free[0] = end;
    ends.push(end);
    ends.sort((a, b) => a - b);
    return true;
  };
}

async function generatorShare(setting: Setting): Promise<number> {
  const admit = queue(setting);
  const start = performance.now();
  const stand = {
    report: () => ({ depth: 0, queued: 0 }),
    run: (_x: Float32Array, { rows }: { rows: number }) =>
      admit(performance.now() - start, rows)
        ? Promise.resolve(new Float32Array(0))
        : Promise.reject(
            new RejectedError('requests', { depth: setting.bound, capacity: setting.bound, rejected: 0 }),
          ),
  } as unknown as LinearRuntime;
  const inputs = Array.from({ length: setting.maxRows }, () => new Float32Array(1));
  const rec = new PhaseRecorder('bounded', setting.rate, `${setting.rate}/s`);
  const plan = { rate: setting.rate, windowMs: WINDOW_MS, seed: SEED, deadlineMs: 1000, sampleMs: 20 };
  const end = await openLoop(stand, { inputs, maxRows: setting.maxRows }, plan, rec);
  const result = rec.result(end);
  return result.refused / result.sent;
}

function dueTimeShare(setting: Setting): number {
  const admit = queue(setting);
  const arrivals = new ArrivalProcess(SEED, setting.rate, setting.maxRows);
  let [sent, refused] = [0, 0];
  for (let a = arrivals.next(); a.at < WINDOW_MS; a = arrivals.next()) {
    sent++;
    if (!admit(a.at, a.rows)) refused++;
  }
  return refused / sent;
}

const main = { servers: 2, fixedMs: 0, perRowMs: 0.16, maxRows: 16 };
const SETTINGS: Setting[] = [
  { ...main, bound: 16, rate: 728 },
  { ...main, bound: 16, rate: 1456 },
  { ...main, bound: 16, rate: 2912 },
  { ...main, bound: 4, rate: 1456 },
  { ...main, bound: 2, rate: 1456 },
  { bound: 1, servers: 1, fixedMs: 0.05, perRowMs: 0, maxRows: 1, rate: 1000 },
  { bound: 1, servers: 1, fixedMs: 0.05, perRowMs: 0, maxRows: 1, rate: 3000 },
];

const pct = (share: number): string => `${(100 * share).toFixed(1)}%`;
console.log('| bound | servers | call ms | offered/s | refused: generator | refused: at due times |');
console.log('| ---: | ---: | --- | ---: | ---: | ---: |');
for (const s of SETTINGS) {
  const call = s.perRowMs > 0 ? `${s.perRowMs} x rows 1-${s.maxRows}` : `${s.fixedMs}`;
  const generator = await generatorShare(s);
  console.log(
    `| ${s.bound} | ${s.servers} | ${call} | ${s.rate} | ${pct(generator)} | ${pct(dueTimeShare(s))} |`,
  );
}
