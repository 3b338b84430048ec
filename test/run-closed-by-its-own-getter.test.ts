/**
 * A call that finds the runtime ready, whose own code (here an option's getter) then closes it,
 * was made while the runtime was ready: a malformed one is `invalid`, a well-formed one meets the
 * closed admission and is `unavailable`. Runtime.run said so; LinearRuntime.run, which reads its
 * options before handing the call to Runtime.run, had it checked against the state again there:
 * every such call was `unavailable`, its mistake unreported, where Runtime.run said `invalid`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunOptions, RuntimeAdmissionOptions } from '../src/index.js';
import { closeRuntimes, start as startLinear } from './fixtures/native-runtime-harness.js';
import { cleanup, rejection, start } from './fixtures/runtime-harness.js';

afterEach(async () => {
  await cleanup();
  await closeRuntimes();
});

/** The runtime under test, reduced to what the test does with it. */
interface Subject {
  run(options: RunOptions): Promise<unknown>;
  close(): Promise<unknown>;
  report(): { state: string; invalid: number; unavailable: number; refused: number; failed: number };
}

const subjects: [string, (admission: RuntimeAdmissionOptions | undefined) => Promise<Subject>][] = [
  [
    'Runtime',
    async (admission) => {
      const rt = await start({ threads: 1, admission });
      return {
        run: (o) => rt.run({ mode: 'echo', value: 1 }, o),
        close: () => rt.close(),
        report: () => rt.report(),
      };
    },
  ],
  [
    'LinearRuntime',
    async (admission) => {
      const lr = await startLinear({ threads: 1, inFeatures: 4, outFeatures: 2, admission });
      return {
        run: (o) => lr.run(new Float32Array(4), o),
        close: () => lr.close(),
        report: () => lr.report(),
      };
    },
  ],
];

const calls: [
  string,
  Partial<Record<keyof RunOptions, unknown>>,
  number,
  string,
  'invalid' | 'unavailable',
][] = [
  ['a negative deadline', { deadlineMs: -1 }, 1, 'OMNI_ERR_INVALID_ARGUMENT', 'invalid'],
  ['a signal that is none', { signal: 'not a signal' }, 1, 'OMNI_ERR_INVALID_ARGUMENT', 'invalid'],
  ['a fractional cost', {}, 1.5, 'OMNI_ERR_INVALID_COST', 'invalid'],
  ['well-formed options', {}, 1, 'OMNI_ERR_UNAVAILABLE', 'unavailable'],
];

const admissions: [string, RuntimeAdmissionOptions | undefined][] = [
  ['bounded', { requests: 2 }],
  ['serial', undefined],
];

describe.each(subjects)('%s.run closed by its own cost getter', (_name, startSubject) => {
  describe.each(admissions)('(%s)', (_kind, admission) => {
    it.each(calls)(
      'with %s: its code, counted as Runtime.run counts it',
      async (_what, options, cost, code, outcome) => {
        const subject = await startSubject(admission);
        const closing: Promise<unknown>[] = [];
        const given = {
          ...options,
          get cost(): number {
            closing.push(subject.close());
            return cost;
          },
        };
        expect((await rejection(subject.run(given as RunOptions))).code).toBe(code);
        expect(closing).toHaveLength(1);
        await closing[0];
        const other = outcome === 'invalid' ? 'unavailable' : 'invalid';
        expect(subject.report()).toMatchObject({
          state: 'stopped',
          [outcome]: 1,
          [other]: 0,
          refused: 0,
          failed: 0,
        });
      },
    );
  });
});
