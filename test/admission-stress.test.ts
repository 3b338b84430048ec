import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { type AdmissionReport, BoundedAdmission, type Claim, type Permit } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { turn } from './fixtures/admission-interleave.js';
import {
  ABORTS,
  ADMITTED,
  CLAIM_LOSSES,
  CLAIM_WINS,
  CLAIMS_SENT,
  COPIES_RECEIVED,
  COPIES_TO_ME,
  DONE,
  FAILED,
  FINISHED,
  GO,
  OPS,
  READY,
  REFUSED_QUEUED,
  REFUSED_REQUESTS,
  REFUSED_TOO_LARGE,
  REFUSED_UNITS,
  ROUND,
  STALE_WINS,
  STATS,
  STATS_WIDTH,
  TIMEOUTS,
  TOO_LARGE,
} from './fixtures/admission-stress-layout.js';

// Mirrors the control words of test/fixtures/admission-stress-worker.ts.

const workerUrl = builtModuleUrl('test/fixtures/admission-stress-worker.js');
const seed = Number(process.env.ADMISSION_STRESS_SEED ?? (Math.random() * 2 ** 31) | 0);

interface Running {
  workers: Worker[];
  exits: Promise<number[]>;
  errors: unknown[];
  control: Int32Array;
}

let started: Worker[] = [];
afterEach(async () => {
  // Only matters when a test failed half-way: never leave threads behind.
  await Promise.all(started.map((worker) => worker.terminate()));
  started = [];
});

function stat(control: Int32Array, index: number, field: number): number {
  return Atomics.load(control, STATS + index * STATS_WIDTH + field);
}

function sum(control: Int32Array, workers: number, field: number): number {
  let total = 0;
  for (let i = 0; i < workers; i++) total += stat(control, i, field);
  return total;
}

/**
 * Resolves once control[index] >= target. Fails at once if a worker fails or they all exit
 * first (a worker that cannot load must not leave the test waiting), and after a generous
 * guard against a hang; nothing is ordered by time.
 */
async function reach(
  control: Int32Array,
  index: number,
  target: number,
  exits: Promise<unknown>,
): Promise<void> {
  const reached = (async () => {
    for (let seen = Atomics.load(control, index); seen < target; seen = Atomics.load(control, index)) {
      const wait = Atomics.waitAsync(control, index, seen, 30_000);
      if ((wait.async ? await wait.value : wait.value) === 'timed-out') {
        throw new Error(`control[${index}] stuck at ${seen}, expected ${target}`);
      }
    }
  })();
  const died = exits.then((codes) => {
    if (Atomics.load(control, index) < target) {
      throw new Error(`workers exited (${JSON.stringify(codes)}) before control[${index}] reached ${target}`);
    }
  });
  await Promise.race([reached, died]);
}

/** Starts the workers, waits until all have attached, then lets them go at once. */
async function start(
  count: number,
  data: (index: number) => { workerData: Record<string, unknown>; transferList?: MessagePort[] },
  control: Int32Array,
): Promise<Running> {
  const errors: unknown[] = [];
  const workers = Array.from({ length: count }, (_, index) => {
    const { workerData, transferList } = data(index);
    const worker = new Worker(new URL(workerUrl), {
      workerData: { ...workerData, control: control.buffer, index, workers: count, seed: seed + index },
      transferList,
    });
    worker.on('error', (err) => errors.push(err));
    return worker;
  });
  started.push(...workers);
  const exits = Promise.all(workers.map((worker) => once(worker, 'exit').then(([code]) => code as number)));
  await reach(control, READY, count, exits);
  Atomics.store(control, GO, 1);
  Atomics.notify(control, GO);
  return { workers, exits, errors, control };
}

interface Sampling {
  samples: number;
  violations: string[];
  maxDepth: number;
  maxUnits: number;
}

/** Reads report() continuously (in bursts, yielding between them) until `until` settles. */
async function sampleUntil(
  admission: BoundedAdmission,
  until: Promise<unknown>,
  limits: { waiting: number },
): Promise<Sampling> {
  let finished = false;
  void until.then(
    () => (finished = true),
    () => (finished = true),
  );
  const sampling: Sampling = { samples: 0, violations: [], maxDepth: 0, maxUnits: 0 };
  const check = (r: AdmissionReport): void => {
    sampling.samples += 1;
    if (r.depth > sampling.maxDepth) sampling.maxDepth = r.depth;
    if (r.units > sampling.maxUnits) sampling.maxUnits = r.units;
    const bad =
      r.depth < 0 ||
      r.depth > r.capacity ||
      r.units < 0 ||
      (r.unitCapacity === null ? r.units !== 0 : r.units > r.unitCapacity) ||
      r.waiting < 0 ||
      r.waiting > limits.waiting ||
      r.leaked !== 0;
    if (bad && sampling.violations.length < 10) sampling.violations.push(JSON.stringify(r));
  };
  while (!finished) {
    for (let i = 0; i < 1000; i++) check(admission.report());
    await turn();
  }
  check(admission.report());
  return sampling;
}

describe('BoundedAdmission under real threads', () => {
  it('has the worker fixture built (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(fileURLToPath(workerUrl))).toBe(true);
  });

  describe.each([
    // ~1.1M operations with units; request-only is the cheaper path and gets a shorter run.
    { mode: 'with units', ceiling: 1000 as number | null, requests: 12, iterations: 360_000 },
    { mode: 'request-only', ceiling: null, requests: 12, iterations: 120_000 },
    // A unit ceiling too large for the Int32 state word: the 64-bit (BigInt) path.
    { mode: 'with wide units', ceiling: (2 ** 30) as number | null, requests: 12, iterations: 120_000 },
  ])('$mode', ({ ceiling, requests, iterations }) => {
    it('never exceeds either bound while threads admit, release and pass claims', async () => {
      const workers = 3;
      const minClaims = 300;
      const maxClaims = 16_384;
      const admission = new BoundedAdmission({ requests, units: ceiling ?? undefined });
      const control = new Int32Array(new SharedArrayBuffer(4 * (STATS + workers * STATS_WIDTH)));
      const winners = new Int32Array(new SharedArrayBuffer(4 * workers * maxClaims));
      // One channel per ordered pair: every claim is posted, as a copy, to both other workers.
      const inbound: MessagePort[][] = Array.from({ length: workers }, () => []);
      const outbound: { port: MessagePort; to: number }[][] = Array.from({ length: workers }, () => []);
      for (let from = 0; from < workers; from++) {
        for (let to = 0; to < workers; to++) {
          if (from === to) continue;
          const { port1, port2 } = new MessageChannel();
          outbound[from]!.push({ port: port1, to });
          inbound[to]!.push(port2);
        }
      }
      const running = await start(
        workers,
        (index) => ({
          workerData: {
            mode: 'mixed',
            buffer: admission.buffer,
            iterations,
            maxHeld: 6,
            claimEvery: 8,
            minClaims,
            maxClaims,
            winners: winners.buffer,
            ceiling,
            inbound: inbound[index],
            outbound: outbound[index],
          },
          transferList: [...inbound[index]!, ...outbound[index]!.map(({ port }) => port)],
        }),
        control,
      );
      const sampling = await sampleUntil(admission, running.exits, { waiting: 0 });
      const codes = await running.exits;
      const where = `seed ${seed}`;
      expect(running.errors, where).toEqual([]);
      expect(codes, where).toEqual([0, 0, 0]);
      expect(Atomics.load(control, FAILED), where).toBe(0);
      expect(sampling.violations, where).toEqual([]);
      expect(sampling.samples).toBeGreaterThan(1000);
      // Both bounds were actually reached.
      expect(sampling.maxDepth).toBeGreaterThan(requests / 2);
      if (ceiling !== null) expect(sampling.maxUnits).toBeGreaterThan(ceiling / 2);

      const report = admission.report();
      expect(report, where).toEqual({
        depth: 0,
        capacity: requests,
        rejected: report.rejected,
        units: 0,
        unitCapacity: ceiling,
        waiting: 0,
        leaked: 0,
      });
      const total = (field: number) => sum(control, workers, field);
      if (iterations >= 300_000) expect(total(OPS)).toBeGreaterThanOrEqual(1_000_000);
      // Refusals happened, for each reason that applies, and were counted exactly.
      expect(total(REFUSED_REQUESTS)).toBeGreaterThan(0);
      if (ceiling !== null) {
        expect(total(REFUSED_UNITS)).toBeGreaterThan(0);
        expect(total(REFUSED_TOO_LARGE)).toBeGreaterThan(0);
      } else {
        expect(total(REFUSED_UNITS) + total(REFUSED_TOO_LARGE)).toBe(0);
      }
      expect(total(REFUSED_QUEUED)).toBe(0);
      expect(report.rejected).toBe(total(REFUSED_REQUESTS) + total(REFUSED_UNITS) + total(REFUSED_TOO_LARGE));
      expect(total(ADMITTED)).toBeGreaterThan(iterations / 4);

      // Claims crossed threads: each was posted to both other workers, and exactly one copy won.
      const claims = total(CLAIMS_SENT);
      expect(claims).toBeGreaterThanOrEqual(workers * minClaims);
      for (let i = 0; i < workers; i++) {
        expect(stat(control, i, COPIES_RECEIVED)).toBe(stat(control, i, COPIES_TO_ME));
        const sent = stat(control, i, CLAIMS_SENT);
        const won = Array.from(winners.subarray(i * maxClaims, i * maxClaims + sent));
        expect(
          won.every((n) => n === 1),
          `claims of worker ${i} won ${JSON.stringify(won.filter((n) => n !== 1))}`,
        ).toBe(true);
        expect(winners.subarray(i * maxClaims + sent, (i + 1) * maxClaims).every((n) => n === 0)).toBe(true);
      }
      expect(total(CLAIM_WINS)).toBe(claims);
      expect(total(CLAIM_LOSSES)).toBe(claims * (workers - 2));
    });
  });

  it('lets exactly one of two threads release each copied claim, and no stale copy after reuse', async () => {
    const workers = 2;
    const rounds = 16;
    const perRound = 1024;
    const admission = new BoundedAdmission({ requests: perRound, units: perRound * 16 });
    const control = new Int32Array(new SharedArrayBuffer(4 * (STATS + workers * STATS_WIDTH)));
    const winners = new Int32Array(new SharedArrayBuffer(4 * perRound));
    const running = await start(
      workers,
      () => ({ workerData: { mode: 'race', buffer: admission.buffer, rounds, winners: winners.buffer } }),
      control,
    );
    let stale: Claim[] = [];
    let expectedWins = 0;
    for (let round = 1; round <= rounds; round++) {
      winners.fill(0);
      const claims: Claim[] = [];
      for (let k = 0; k < perRound; k++) {
        const permit = admission.tryAdmit((k * 7 + round) % 17) as Permit;
        expect(permit.ok).toBe(true);
        claims.push(permit.toClaim());
      }
      expect(admission.report()).toMatchObject({ depth: perRound });
      for (const worker of running.workers) worker.postMessage({ claims, stale });
      Atomics.store(control, ROUND, round);
      Atomics.notify(control, ROUND);
      await reach(control, FINISHED, round * workers, running.exits);
      expect(Atomics.load(control, FAILED)).toBe(0);
      const won = Array.from(winners);
      expect(
        won.every((n) => n === 1),
        `round ${round}: ${JSON.stringify(won.filter((n) => n !== 1))}`,
      ).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
      expectedWins += perRound;
      stale = claims;
    }
    expect(await running.exits).toEqual([0, 0]);
    expect(running.errors).toEqual([]);
    const total = (field: number) => sum(control, workers, field);
    expect(total(CLAIM_WINS)).toBe(expectedWins);
    expect(total(CLAIM_LOSSES)).toBe(expectedWins);
    expect(total(STALE_WINS)).toBe(0);
    // Each thread led half the rounds and won at least their first claims: both ways of
    // releasing a copied claim won. (Who wins the rest is the scheduler's choice: left to chance,
    // whoever started a round first usually won all of it, so one thread could win nothing.)
    expect(stat(control, 0, CLAIM_WINS)).toBeGreaterThanOrEqual(rounds / 2);
    expect(stat(control, 1, CLAIM_WINS)).toBeGreaterThanOrEqual(rounds / 2);
  });

  // The racers meet at a spin barrier each round: one that died before it left the other
  // spinning there for good, a thread that never ended (only afterEach's terminate stopped it).
  it('ends a race whose other racer died before the barrier: both threads exit, failed', async () => {
    const admission = new BoundedAdmission({ requests: 4, units: 64 });
    const control = new Int32Array(new SharedArrayBuffer(4 * (STATS + 2 * STATS_WIDTH)));
    const winners = new Int32Array(new SharedArrayBuffer(4 * 4));
    const running = await start(
      2,
      (index) => ({
        workerData: {
          mode: 'race',
          buffer: admission.buffer,
          rounds: 1,
          winners: winners.buffer,
          failInRound: index === 1 ? 1 : undefined,
        },
      }),
      control,
    );
    const claims = [1, 2].map(() => (admission.tryAdmit(1) as Permit).toClaim());
    for (const worker of running.workers) worker.postMessage({ claims, stale: [] });
    // running.exits rejects with the first error; each thread's own exit is what counts here.
    running.exits.catch(() => undefined);
    const codes = Promise.all(
      running.workers.map((worker) => new Promise<number>((resolve) => worker.once('exit', resolve))),
    );
    Atomics.store(control, ROUND, 1);
    Atomics.notify(control, ROUND);
    expect(await codes).toEqual([1, 1]);
    expect(running.errors).toHaveLength(2);
    expect(Atomics.load(control, FAILED)).toBe(1);
    // The survivor left before the race: no claim was released.
    expect(Array.from(winners)).toEqual([0, 0, 0, 0]);
    expect(admission.report()).toMatchObject({ depth: 2 });
  });

  it('wakes waiters across threads without losing a wake-up, and givers-up take nothing', async () => {
    const workers = 3;
    const ceiling = 16;
    const lanes = 3;
    const iterations = 500;
    const admission = new BoundedAdmission({ requests: 2, units: ceiling });
    const control = new Int32Array(new SharedArrayBuffer(4 * (STATS + workers * STATS_WIDTH)));
    const running = await start(
      workers,
      () => ({ workerData: { mode: 'waiting', buffer: admission.buffer, iterations, lanes, ceiling } }),
      control,
    );
    // Each lane has at most one waiter at a time.
    const sampling = await sampleUntil(admission, running.exits, { waiting: workers * lanes });
    expect(await running.exits).toEqual([0, 0, 0]);
    expect(running.errors).toEqual([]);
    expect(Atomics.load(control, FAILED)).toBe(0);
    expect(Atomics.load(control, DONE)).toBe(workers);
    expect(sampling.violations, `seed ${seed}`).toEqual([]);
    const total = (field: number) => sum(control, workers, field);
    expect(total(ADMITTED) + total(TIMEOUTS) + total(ABORTS) + total(TOO_LARGE)).toBe(
      workers * lanes * iterations,
    );
    expect(total(TOO_LARGE)).toBeGreaterThan(0);
    const report = admission.report();
    // Timeouts and too-large are refusals; aborts are not.
    expect(report.rejected).toBe(total(TIMEOUTS) + total(TOO_LARGE));
    expect(report).toMatchObject({ depth: 0, units: 0, waiting: 0, leaked: 0 });
    // Nothing is left queued anywhere (no WAITING flag stuck): an admission is immediate.
    const after = admission.tryAdmit(ceiling);
    expect(after.ok ? 'admitted' : after.reason).toBe('admitted');
    (after as Permit).release();
  });
});
