/**
 * `omni-runtime bench` end to end, through the built command line, on the CPU fixture: a tiny
 * run whose highest offered load is far above capacity. What it checks is structural (the bound
 * held, refusals instead of missed deadlines, every request counted once), never a duration:
 * which mode's p99 is lower is the benchmark's figure, not a test's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BenchSummary, PhaseSummary } from '../src/cli/bench-report.js';
import { isWellFormedXml, runCli } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const tempDir = tempDirs('omni-bench-');

async function bench(args: string[]): Promise<{ summary: BenchSummary; out: string }> {
  const out = tempDir();
  const { code, stdout, stderr } = await runCli(['bench', '--json', '--out', out, ...args]);
  expect(stderr, 'stderr of a --json run with a non-TTY stderr').toBe('');
  expect(code).toBe(0);
  return { summary: JSON.parse(stdout) as BenchSummary, out };
}

describe('omni-runtime bench', () => {
  it('compares the unbounded queue with bounded admission, writes JSON and SVG charts', async () => {
    // 10x the calibrated capacity for 0.75 s queues ~7 s of work behind a 400 ms deadline. The
    // overload is 10x only if the calibration measured the capacity the phases get: a process
    // held up for 350 ms of 0.5 s of calibration (375 ms counted) measured so little that 10x
    // missed no deadline, or it completed nothing (forced). A second of it (750 ms counted)
    // still finds the overload with 600 ms of it held up.
    const { summary, out } = await bench([
      ...['--duration', '3', '--calibrate', '1', '--rates', '0.5x,10x', '--deadline-ms', '400'],
      ...['--threads', '2', '--requests', '4', '--units', '32', '--seed', '7'],
    ]);
    expect(summary.backend).toBe('fixture');
    expect(summary.calibration.capacity).toBeGreaterThan(0);
    expect(summary.phases).toHaveLength(4);

    for (const p of summary.phases) {
      expect(p.sent, `${p.mode} @ ${p.rateLabel}`).toBeGreaterThan(0);
      // Every request ends exactly one way.
      expect(p.completed + p.refused + p.deadline + p.failed, `${p.mode} @ ${p.rateLabel}`).toBe(p.sent);
      expect(p.failed).toBe(0);
      expect(Object.values(p.refusedBy).reduce((a, b) => a + b, 0)).toBe(p.refused);
      expect(p.latencyMs.count).toBe(p.completed);
    }
    const byLoad = (label: string, mode: string): PhaseSummary => {
      const phase = summary.phases.find((p) => p.rateLabel === label && p.mode === mode);
      if (!phase) throw new Error(`no ${mode} phase at ${label}`);
      return phase;
    };
    for (const label of ['0.5x', '10x']) {
      expect(byLoad(label, 'unbounded').refused, 'the serial scheduler never refuses').toBe(0);
      // The bound holds: depth never exceeded the request bound.
      expect(byLoad(label, 'bounded').depth.max).toBeLessThanOrEqual(summary.bounds.requests);
    }
    const unbounded = byLoad('10x', 'unbounded');
    const bounded = byLoad('10x', 'bounded');
    expect(bounded.completed).toBeGreaterThan(0);
    expect(bounded.refused).toBeGreaterThan(0);
    expect(unbounded.deadline).toBeGreaterThan(0);
    expect(unbounded.depth.max).toBeGreaterThan(summary.bounds.requests);

    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as {
      phases: Array<{ timeline: unknown[] }>;
    };
    expect(results.phases).toHaveLength(4);
    for (const p of results.phases) expect(p.timeline.length).toBeGreaterThan(0);

    const expected: Record<string, string[]> = {
      'latency.svg': ['unbounded', 'bounded', 'p50', 'p99', 'p99.9', 'deadline'],
      'throughput.svg': ['unbounded', 'bounded', 'offered load (requests/s)'],
      'timeline.svg': ['unbounded', 'bounded', 'refused', 'deadline missed', 'depth (outstanding calls)'],
    };
    for (const [file, series] of Object.entries(expected)) {
      expect(summary.files).toContain(join(out, file));
      const svg = readFileSync(join(out, file), 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(isWellFormedXml(svg), `${file} is well-formed XML`).toBe(true);
      for (const name of series) expect(svg, `${file} names ${name}`).toContain(`>${name}</text>`);
    }
  });

  it('repeats the same arrivals and costs for the same seed', async () => {
    const args = [
      ...['--duration', '0.6', '--calibrate', '0.1', '--rates', '300', '--deadline-ms', '2000'],
      ...['--in-features', '64', '--out-features', '64'],
    ];
    const sent = async (): Promise<number[][]> =>
      (await bench([...args, '--seed', '11'])).summary.phases.map((p) => [p.sent, p.sentUnits]);
    // Different seeds giving different schedules is checked in cli-options.test.ts, in-process.
    expect(await sent()).toEqual(await sent());
  });
});
