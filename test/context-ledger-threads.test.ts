/**
 * ContextLedger across real threads: worker threads record their native contexts at once at pool
 * start, and a thread's close hook takes its entry back while the main thread may be taking the
 * entries of threads that have exited. A slot given to two recorders loses a context (one address
 * overwrites the other: never closed, or closed twice); an entry seen by two takers is closed
 * twice. test/context-ledger.test.ts is single-threaded and cannot show either: here two threads
 * (test/fixtures/context-ledger-worker.ts) race on one ledger, round after round, and the main
 * thread checks every round's outcome. Threads are ordered by control words
 * (test/fixtures/context-ledger-layout.ts), never by time.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextLedger } from '../src/native/context-ledger.js';
import { builtModuleUrl } from '../src/paths.js';
import {
  CONTROL_WORDS,
  CYCLE_UNRECORDED,
  contextAddress,
  FAILED,
  FINISHED,
  OWNER,
  REFUSED_TAKES,
  ROUND,
  STRAYS,
} from './fixtures/context-ledger-layout.js';

const workerUrl = builtModuleUrl('test/fixtures/context-ledger-worker.js');

interface RaceShape {
  slots: number;
  /** Per thread and round. */
  contexts: number;
  /**
   * 'record': record-and-take-back cycles per round, before the contexts left for the check;
   * 'take': record-and-race-to-take cycles per round; 'sweep': record-and-sweep cycles per round.
   */
  cycles?: number;
  rounds: number;
}

interface Race {
  ledger: ContextLedger;
  control: Int32Array;
  results: Int32Array;
  workers: Worker[];
  errors: unknown[];
  exits: Promise<number[]>;
}

let started: Worker[] = [];
afterEach(async () => {
  // Only matters when a test failed half-way: never leave threads behind.
  await Promise.all(started.map((worker) => worker.terminate()));
  started = [];
});

function startRace(
  mode: 'record' | 'take' | 'sweep',
  { slots, contexts, cycles = 0, rounds }: RaceShape,
): Race {
  const ledger = ContextLedger.create(slots);
  const control = new Int32Array(new SharedArrayBuffer(4 * CONTROL_WORDS));
  const results = new Int32Array(new SharedArrayBuffer(4 * 2 * contexts));
  const errors: unknown[] = [];
  const workers = [0, 1].map((index) => {
    const worker = new Worker(new URL(workerUrl), {
      workerData: {
        mode,
        buffer: ledger.buffer,
        control: control.buffer,
        results: results.buffer,
        index,
        rounds,
        contexts,
        cycles,
      },
    });
    worker.on('error', (err) => errors.push(err));
    return worker;
  });
  started.push(...workers);
  Atomics.store(control, OWNER, workers[0]!.threadId);
  const exits = Promise.all(workers.map((worker) => once(worker, 'exit').then(([code]) => code as number)));
  return { ledger, control, results, workers, errors, exits };
}

/** Opens `round` and resolves once both workers have finished it (or one has failed). */
async function runRound({ control, results }: Race, round: number): Promise<void> {
  results.fill(0);
  Atomics.store(control, ROUND, round);
  Atomics.notify(control, ROUND);
  for (let seen = Atomics.load(control, FINISHED); seen < 2 * round; seen = Atomics.load(control, FINISHED)) {
    // A worker may notify after another's bump was already seen: a wake-up alone proves nothing.
    const wait = Atomics.waitAsync(control, FINISHED, seen, 30_000);
    if ((wait.async ? await wait.value : wait.value) === 'timed-out') {
      throw new Error(`round ${round}: the workers stopped at ${seen} finished`);
    }
  }
  expect(Atomics.load(control, FAILED), `round ${round}`).toBe(0);
}

/** Addresses in numeric order (Array.prototype.sort compares BigInts as strings). */
function sorted(addresses: bigint[]): bigint[] {
  return addresses.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

describe('ContextLedger under real threads', () => {
  it('has the worker fixture built (npx tsc -p tsconfig.json)', () => {
    expect(existsSync(fileURLToPath(workerUrl))).toBe(true);
  });

  // Mutants: record() claiming a slot by load-then-store instead of compareExchange (both
  // recorders took one slot, and the second address overwrote the first); the full-ledger count
  // by load-then-store (counts lost); take() freeing its slot before swapping out the address
  // (another recorder's claim in between, then its take refused).
  it('gives each slot to one recorder only while two threads record at once', async () => {
    // Each thread alone overfills the ledger: both race for its slots, then count at once the
    // contexts that found it full.
    const contexts = 12;
    const slots = 8;
    const rounds = 100;
    const race = startRace('record', { slots, contexts, cycles: 256, rounds });
    const [first, second] = race.workers.map((worker) => worker.threadId) as [number, number];
    const failures: string[] = [];
    let unrecordedBefore = 0;
    let cycleUnrecordedBefore = 0;
    let refusedBefore = 0;
    for (let round = 1; round <= rounds; round++) {
      await runRound(race, round);
      const recorded: bigint[][] = [[], []];
      const given = new Set<number>();
      let full = 0;
      for (const index of [0, 1]) {
        for (let k = 0; k < contexts; k++) {
          const slot = race.results[index * contexts + k]!;
          if (slot < 0) {
            full += 1;
            continue;
          }
          given.add(slot);
          recorded[index]!.push(contextAddress(index, round, k));
        }
      }
      // Every context that found the ledger full was counted, in the cycles and after them.
      const unrecorded = race.ledger.unrecorded - unrecordedBefore;
      const cycleUnrecorded = Atomics.load(race.control, CYCLE_UNRECORDED) - cycleUnrecordedBefore;
      unrecordedBefore += unrecorded;
      cycleUnrecordedBefore += cycleUnrecorded;
      const refusedTakes = Atomics.load(race.control, REFUSED_TAKES) - refusedBefore;
      refusedBefore += refusedTakes;
      // Each thread's entries come back to whoever takes that thread's, and empty the ledger.
      const takenFirst = sorted(race.ledger.takeThread(first));
      const takenSecond = sorted(race.ledger.takeThread(second));
      const left = race.ledger.takeAll();
      const outcome = {
        recorded: recorded[0]!.length + recorded[1]!.length,
        slotsGiven: given.size,
        full,
        unrecordedCounted: unrecorded === full + cycleUnrecorded,
        refusedTakes,
        firstBack: isDeepStrictEqual(takenFirst, recorded[0]),
        secondBack: isDeepStrictEqual(takenSecond, recorded[1]),
        left: left.length,
      };
      const expected = {
        recorded: slots,
        slotsGiven: slots,
        full: 2 * contexts - slots,
        unrecordedCounted: true,
        refusedTakes: 0,
        firstBack: true,
        secondBack: true,
        left: 0,
      };
      // One line per bad round (the first few): an expect() per round would stop at the first.
      if (failures.length < 3 && !isDeepStrictEqual(outcome, expected)) {
        failures.push(`round ${round}: ${JSON.stringify(outcome)}`);
      }
    }
    expect(await race.exits).toEqual([0, 0]);
    expect(race.errors).toEqual([]);
    expect(failures).toEqual([]);
  });

  // Mutant: take() freeing the entry by load-then-store instead of compareExchange: the thread's
  // close hook and a takeThread of that thread both saw the address, and both would close it.
  // (The runtime calls takeThread only once the thread has exited: the compare-exchange is what
  // still leaves one taker should the two ever meet.)
  it("gives each entry to one taker only: the thread's own take or another thread's takeThread", async () => {
    const contexts = 32;
    const cycles = 32;
    const rounds = 50;
    const race = startRace('take', { slots: contexts, contexts, cycles, rounds });
    const failures: string[] = [];
    let ownerWins = 0;
    let reclaimerWins = 0;
    for (let round = 1; round <= rounds; round++) {
      await runRound(race, round);
      for (let k = 0; k < contexts; k++) {
        const owner = race.results[k]!;
        const reclaimer = race.results[contexts + k]!;
        ownerWins += owner;
        reclaimerWins += reclaimer;
        if (owner + reclaimer !== cycles && failures.length < 3) {
          failures.push(`round ${round}, context ${k}: owner took it ${owner}, reclaimer ${reclaimer} times`);
        }
      }
      const left = race.ledger.takeAll();
      if (left.length !== 0 && failures.length < 3) failures.push(`round ${round}: left ${left.length}`);
    }
    expect(await race.exits).toEqual([0, 0]);
    expect(race.errors).toEqual([]);
    expect(Atomics.load(race.control, STRAYS)).toBe(0);
    expect(failures).toEqual([]);
    expect(ownerWins + reclaimerWins).toBe(rounds * cycles * contexts);
  });

  // Mutant: takeThread freeing a slot before taking its address: a thread starting meanwhile
  // claimed the freed slot and stored its own address there, which the sweep then took (the
  // main thread would close a live thread's context) while the exited thread's was lost.
  it("takes an exited thread's entries, and only those, while another thread records", async () => {
    // The exited thread's entries fill the ledger; a small one, so that the live thread's
    // records go over every slot again and again while the sweep frees them.
    const contexts = 8;
    const cycles = 64;
    const rounds = 25;
    const race = startRace('sweep', { slots: contexts, contexts, cycles, rounds });
    const failures: string[] = [];
    let refusedBefore = 0;
    let straysBefore = 0;
    for (let round = 1; round <= rounds; round++) {
      await runRound(race, round);
      const swept = Array.from(race.results.subarray(0, contexts));
      const refusedTakes = Atomics.load(race.control, REFUSED_TAKES) - refusedBefore;
      refusedBefore += refusedTakes;
      const strays = Atomics.load(race.control, STRAYS) - straysBefore;
      straysBefore += strays;
      const outcome = {
        sweptEach: swept.every((n) => n === cycles),
        refusedTakes,
        strays,
        left: race.ledger.takeAll().length,
      };
      if (
        failures.length < 3 &&
        !isDeepStrictEqual(outcome, { sweptEach: true, refusedTakes: 0, strays: 0, left: 0 })
      ) {
        failures.push(`round ${round}: ${JSON.stringify({ ...outcome, swept })}`);
      }
    }
    expect(await race.exits).toEqual([0, 0]);
    expect(race.errors).toEqual([]);
    expect(failures).toEqual([]);
  });
});
