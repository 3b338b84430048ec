/**
 * The microbenchmark measurement (bench/lib/ratios.ts measure): each case's ns/op is the median
 * of its per-round medians divided by its batch, and a ratio is baseline ns / case ns. tinybench
 * is replaced by a stand-in whose per-round medians are given, so the figures are exact.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';

/** Per case name, the p50 (ms per call) each successive round reports; 'errored' fails it. */
const rounds = new Map<string, (number | 'errored')[]>();
/** Every run, in order: the case's name and the async flag it was added with. */
const runs: { name: string; async: boolean }[] = [];

vi.mock('tinybench', () => ({
  Bench: class {
    tasks: { result: unknown }[] = [];
    #name = '';
    add(name: string, _fn: unknown, opts: { async: boolean }): void {
      this.#name = name;
      runs.push({ name, async: opts.async });
    }
    async run(): Promise<void> {
      const next = rounds.get(this.#name)!.shift()!;
      this.tasks = [
        // An errored case keeps a figure here, so only its state can tell it failed.
        next === 'errored'
          ? { result: { state: 'errored', latency: { p50: 0.001 } } }
          : { result: { state: 'completed', latency: { p50: next } } },
      ];
    }
  },
}));

const { measure } = await import('../bench/lib/ratios.js');

beforeEach(() => {
  rounds.clear();
  runs.length = 0;
});

const noop = (): void => {};

describe('measure (the microbenchmark figures)', () => {
  it('ns/op is the median of the rounds per operation of the batch; ratio = baseline ns / case ns', async () => {
    rounds.set('base', [0.001, 0.005, 0.003]); // ms per call: median 3000 ns, batch 1
    rounds.set('fast', [0.003, 0.003, 0.003]); // 3000 ns per call of a batch of 4: 750 ns/op
    const rows = await measure(
      [
        { name: 'base', batch: 1, fn: noop },
        { name: 'fast', batch: 4, fn: noop, baseline: 'base', target: 4 },
      ],
      3,
    );
    expect(rows.map((r) => [r.name, r.nsPerOp, r.baseline, r.ratio])).toEqual([
      ['base', 3000, undefined, undefined],
      ['fast', 750, 'base', 4],
    ]);
    // Exactly on its target is meeting it.
    expect(rows[1]!.met).toBe(true);
    expect(rows[0]!.met).toBeUndefined();
  });

  it('runs the cases interleaved, round by round, each with its own async flag', async () => {
    rounds.set('a', [0.001, 0.001]);
    rounds.set('b', [0.001, 0.001]);
    await measure(
      [
        { name: 'a', batch: 1, fn: noop },
        { name: 'b', batch: 1, fn: async () => {}, async: true },
      ],
      2,
    );
    expect(runs).toEqual([
      { name: 'a', async: false },
      { name: 'b', async: true },
      { name: 'a', async: false },
      { name: 'b', async: true },
    ]);
  });

  it('fails the run when a case fails, rather than printing a figure for it', async () => {
    rounds.set('broken', ['errored']);
    await expect(measure([{ name: 'broken', batch: 1, fn: noop }], 1)).rejects.toThrow(
      'benchmark case broken failed',
    );
  });
});
