/**
 * Systematic preemptions of the admission (see fixtures/admission-preempt-sweep.ts): every operation
 * is preempted by every other, on another instance of the same buffer, after each of its steps,
 * from each start state, in each word mode; then some schedules are preempted twice. The hand-
 * picked interleavings of admission-atomicity and admission-wake-races are among them.
 */
import { describe, expect, it } from 'vitest';
import { WORD_MODES } from './fixtures/admission-interleave.js';
import { NEVER } from './fixtures/admission-preempt-frames.js';
import { describeStep } from './fixtures/admission-preempt-hook.js';
import { OPS, opNamed } from './fixtures/admission-preempt-ops.js';
import { STATES, stateNamed } from './fixtures/admission-preempt-states.js';
import { type Schedule, sweep } from './fixtures/admission-preempt-sweep.js';
import { World } from './fixtures/admission-preempt-world.js';

/** Small, so that filling the bound takes few steps; room for what the operations prepare. */
const REQUESTS = 5;

describe.each(WORD_MODES)('one preemption (%s)', (_mode, units) => {
  const fits = (x: { needsUnits?: boolean }): boolean => units !== undefined || !x.needsUnits;
  it.each(STATES.filter(fits).map((state) => [state.name, state] as const))(
    'of every operation by every other, from the state %s',
    async (_name, state) => {
      const violations: string[] = [];
      let runs = 0;
      for (const a of OPS.filter(fits)) {
        for (const b of OPS.filter(fits)) {
          const result = await sweep(REQUESTS, units, { state, a, b });
          runs += result.runs;
          violations.push(...result.violations);
        }
      }
      expect(violations.slice(0, 10)).toEqual([]);
      expect(runs).toBeGreaterThan(OPS.filter(fits).length ** 2);
    },
  );
});

const twice = (state: string, a: string, b: string, second: Pick<Schedule, 'inside' | 'later'>) => ({
  name: `${a} | ${b} | ${second.inside ? `inside it: ${second.inside.name}` : `later: ${second.later === 'rest' ? 'its rest' : second.later?.name}`} (${state})`,
  schedule: { state: stateNamed(state), a: opNamed(a), b: opNamed(b), ...second },
});

const TWICE = [
  // A waiter counted before the last waiter's clear, a release between the clear and the re-set.
  twice('full on requests', 'abort of a waiting admit', 'admit(1)', { later: opNamed('permit.release') }),
  // A waiter counted before that clear's re-check and gone before its re-set.
  twice('full on requests', 'abort of a waiting admit', 'admit(1), aborted later', { later: 'rest' }),
  twice('full on requests', 'admit timeout', 'admit(1), timing out later', { later: 'rest' }),
  // A release that lands while a waiter has read SEQ and failed, but is not asleep yet.
  twice('full on requests', 'permit.release', 'admit(1), asleep later', { later: 'rest' }),
  twice('a waiter queued on instance 1', 'abort of a waiting admit', 'admit(1), asleep later', {
    later: 'rest',
  }),
  twice('a waiter queued on instance 2', 'admit woken by a release', 'admit(1), aborted later', {
    later: 'rest',
  }),
  twice('closed, one permit held', 'permit.release', 'close()', { later: opNamed('permit.release') }),
  // A slot freed behind a claim's scan of the slots and another taken ahead of it: the scan
  // must still find a slot (there are as many as requests).
  twice('full of claims on instance 3', 'permit.toClaim', 'releaseClaim', {
    later: opNamed('tryAdmit(0) and toClaim'),
  }),
  // Three copies of one claim: exactly one wins.
  twice('empty', 'releaseClaim(copy of a shared claim)', 'reclaim(copy of a shared claim)', {
    inside: opNamed('releaseClaim(copy of a shared claim)'),
  }),
  twice('full on requests', 'permit.release', 'tryAdmit(1)', { inside: opNamed('tryAdmit(1)') }),
  twice('full on requests', 'admit woken by a release', 'permit.release', { inside: opNamed('tryAdmit(1)') }),
  twice('a waiter queued on instance 2', 'permit.release', 'abort of a waiting admit', {
    inside: opNamed('permit.release'),
  }),
  twice('full on requests', 'abort of a waiting admit', 'admit woken by a release', {
    inside: opNamed('abort of a waiting admit'),
  }),
];

describe.each(WORD_MODES)('two preemptions (%s)', (_mode, units) => {
  it.each(TWICE.map((c) => [c.name, c.schedule] as const))('%s', async (_name, schedule) => {
    const result = await sweep(REQUESTS, units, schedule);
    expect(result.violations.slice(0, 10)).toEqual([]);
  });
});

describe('the explorer reaches what it claims to', () => {
  async function stepsOf(state: string, a: string): Promise<string[]> {
    const world = new World(REQUESTS, 10);
    await world.run(stateNamed(state), opNamed(a), { op: opNamed('report()'), at: NEVER });
    expect(world.violations).toEqual([]);
    return world.frameLog[0]!.steps.map(describeStep);
  }

  it.each([
    ['full on requests', 'abort of a waiting admit', '1:and(state)'], // the last waiter clears WAITING
    ['full on requests', 'admit timeout', '1:and(state)'],
    ['empty', 'admit woken by a release', '1:and(state)'],
    ['empty', 'admit head retry', '1:waitAsync(SEQ)'], // the second waiter sleeps after the head took the room
    ['a waiter queued on instance 2', 'permit.release', '2:compareExchange(state)'], // the other instance's head wakes
    ['closed, one permit held', 'permit.release', '1:notify(SEQ)'], // the drain is woken
    ['empty', 'leak guard reclaims a cohort', '1L:add(LEAKED)'],
    ['empty', 'close()', '1:or(state)'],
  ])('from %s, %s makes %s', async (state, a, step) => {
    expect(await stepsOf(state, a)).toContain(step);
  });
});
