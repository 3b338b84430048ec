/**
 * Each phase's share of --duration (bench-options phaseS) is > 0 whenever --duration is. The
 * flag takes 1e-400 as Number.MIN_VALUE (decimalValue), and that divided among the phases
 * rounds to 0: every phase then had a window of 0 s, its achieved rate was 0 / 0 (NaN in the
 * table, null in results.json where a number belongs).
 */
import { describe, expect, it } from 'vitest';
import { type BenchConfig, parseBenchArgs } from '../src/cli/bench-options.js';
import { PhaseRecorder } from '../src/cli/phase-recorder.js';

function config(argv: string[]): BenchConfig {
  const parsed = parseBenchArgs(argv, {});
  if (parsed === 'help') throw new Error('unexpected help');
  return parsed;
}

describe("a phase's share of --duration", () => {
  it('is the least time there is where the division rounds to 0, as --duration 1e-400 is', () => {
    // Eight phases by default (4 rates x 2 modes); two with one rate.
    for (const argv of [
      ['--duration', '1e-400'],
      ['--duration', '5e-324', '--rates', '100'],
    ]) {
      expect(config(argv).phaseS, argv.join(' ')).toBe(Number.MIN_VALUE);
    }
  });

  it('is unchanged where it does not round to 0', () => {
    expect(config(['--duration', '8']).phaseS).toBe(1);
    expect(config(['--duration', '2e-323', '--rates', '100']).phaseS).toBe(1e-323);
  });

  it('gives a phase that completed nothing an achieved rate of 0, a number', () => {
    const { phaseS } = config(['--duration', '1e-400']);
    const rec = new PhaseRecorder('bounded', 100, '100/s');
    // As bench-run sets the window up (windowMs = phaseS * 1000).
    rec.begin(0, phaseS * 1000);
    expect(rec.result(0).achievedRate).toBe(0);
  });
});
