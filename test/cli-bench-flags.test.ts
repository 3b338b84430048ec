/**
 * `omni-runtime bench` flags at their edges, in-process: the documented defaults, every range's
 * last accepted value and first refused one. Mistakes are UsageErrors (code OMNI_ERR_USAGE).
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../src/cli/args.js';
import {
  type BenchConfig,
  checkPhaseArrivals,
  MAX_PHASE_ARRIVALS,
  parseBenchArgs,
} from '../src/cli/bench-options.js';
import { parseServeArgs } from '../src/cli/serve-command.js';
import { MAX_DEVICE } from '../src/native/device.js';

function config(argv: string[]): BenchConfig {
  const parsed = parseBenchArgs(argv, {});
  if (parsed === 'help') throw new Error('unexpected help');
  return parsed;
}

function usageCode(argv: string[]): string | undefined {
  try {
    config(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as UsageError).code;
  }
  return undefined;
}

describe('bench flag defaults (as --help and the README give them)', () => {
  it('seed 1, a 1024 -> 1024 layer, 1 s of calibration, ./bench-results, the table', () => {
    expect(config([])).toMatchObject({
      seed: 1,
      inFeatures: 1024,
      outFeatures: 1024,
      calibrateS: 1,
      deadlineMs: 1000,
      outDir: resolve('bench-results'),
      json: false,
    });
    expect(config(['--json']).json).toBe(true);
  });

  it('--units defaults to 8 x --requests, --requests to 8 x --threads', () => {
    expect(config(['--threads', '3'])).toMatchObject({ threads: 3, requests: 24, units: 192 });
    expect(config(['--threads', '3', '--requests', '5'])).toMatchObject({ requests: 5, units: 40 });
  });
});

describe('bench flag ranges', () => {
  it.each([
    ['--seed', 'seed', '4294967295', '4294967296', []],
    ['--threads', 'threads', '256', '257', []],
    ['--requests', 'requests', '65536', '65537', []],
    // A narrow layer, so that 4,096 rows' inputs fit the input budget below.
    ['--max-rows', 'maxRows', '4096', '4097', ['--in-features', '16']],
    ['--in-features', 'inFeatures', '16384', '16385', []],
    ['--duration', 'durationS', '86400', '86401', []],
    ['--out-features', 'outFeatures', '16384', '16385', []],
    ['--calibrate', 'calibrateS', '3600', '3601', []],
  ] as const)('%s (%s) takes %s, refuses %s', (flag, field, last, first, others) => {
    const units = ['--units', '100000', ...others];
    expect(config([flag, last, ...units])[field]).toBe(Number(last));
    expect(usageCode([flag, first, ...units])).toBe('OMNI_ERR_USAGE');
  });

  it('refuses --max-rows and --in-features whose inputs would not fit in 1 GiB', () => {
    // One input per row count, 1..maxRows rows of inFeatures floats: 4,096 rows of 1,024 would
    // be 34 GB, filled before the first phase (it died of memory instead). 723 rows is 1.07e9 B.
    const units = ['--units', '100000'];
    expect(config(['--max-rows', '723', ...units]).maxRows).toBe(723);
    expect(usageCode(['--max-rows', '724', ...units])).toBe('OMNI_ERR_USAGE');
    expect(usageCode(['--max-rows', '4096', ...units])).toBe('OMNI_ERR_USAGE');
    expect(usageCode(['--max-rows', '16', '--in-features', '16384', ...units])).toBeUndefined();
    expect(usageCode(['--max-rows', '256', '--in-features', '16384', ...units])).toBe('OMNI_ERR_USAGE');
    // docs/limits.md: all 4,096 rows at 31 input features or fewer.
    expect(config(['--max-rows', '4096', '--in-features', '31', ...units]).maxRows).toBe(4096);
    expect(usageCode(['--max-rows', '4096', '--in-features', '32', ...units])).toBe('OMNI_ERR_USAGE');
  });

  it("--deadline-ms takes any length, as the runtime does: past one timer's 2^31 - 1 ms too", () => {
    for (const ms of ['2147483648', '1e15', String(Number.MAX_VALUE)]) {
      expect(config(['--deadline-ms', ms]).deadlineMs).toBe(Number(ms));
    }
    // A length a double cannot hold reads as Infinity: no number at all.
    expect(usageCode(['--deadline-ms', '1e309'])).toBe('OMNI_ERR_USAGE');
  });

  // x-omni-deadline-ms: 1e-400 gives the shortest deadline there is (serve-status-5xx), while the
  // flag refused it as 0 (Number() reads it so), though its help says any number > 0. Read by one
  // parser now; 0 however written, and a sign, are still refused.
  it('--deadline-ms reads as x-omni-deadline-ms does: one too small for a double is the shortest', () => {
    for (const ms of ['1e-400', '0.0000001e-400', '+1e-400']) {
      expect(config(['--deadline-ms', ms]).deadlineMs, ms).toBe(Number.MIN_VALUE);
      const serve = parseServeArgs(['--deadline-ms', ms], {});
      expect(serve !== 'help' && serve.deadlineMs, ms).toBe(Number.MIN_VALUE);
    }
    for (const ms of ['0e-400', '-1e-400', '-0', '0x10', 'Infinity']) {
      expect(usageCode(['--deadline-ms', ms]), ms).toBe('OMNI_ERR_USAGE');
      expect(() => parseServeArgs(['--deadline-ms', ms], {}), ms).toThrow(
        expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
      );
    }
  });

  it.each([
    ['--deadline-ms', 'deadlineMs'],
    ['--calibrate', 'calibrateS'],
    ['--duration', 'durationS'],
  ] as const)('%s must be above 0', (flag, field) => {
    expect(config([flag, '0.001'])[field]).toBe(0.001);
    expect(usageCode([flag, '0'])).toBe('OMNI_ERR_USAGE');
  });

  it.each([['--threads'], ['--requests'], ['--units'], ['--max-rows']])('%s must be at least 1', (flag) => {
    // Every other flag given and valid, so only this one can be the mistake.
    const others = ['--threads', '2', '--requests', '4', '--units', '32', '--max-rows', '4'];
    const i = others.indexOf(flag);
    const argv = [...others.slice(0, i), flag, '0', ...others.slice(i + 2)];
    expect(usageCode(argv)).toBe('OMNI_ERR_USAGE');
    expect(config(others)).toMatchObject({ threads: 2, requests: 4, units: 32, maxRows: 4 });
  });

  // `-0` is in [0, max]: --seed was handed on as -0, a value toLocaleString prints as "-0" and
  // Object.is tells from 0. It is 0; where the minimum is 1 (or above 0) it stays refused.
  it('--seed -0 is seed 0; --threads, --requests, --units and --max-rows refuse -0', () => {
    expect(config(['--seed', '-0']).seed).toBe(0);
    expect(config(['--seed', '-0.0e3']).seed).toBe(0);
    for (const flag of ['--threads', '--requests', '--units', '--max-rows', '--duration', '--deadline-ms']) {
      expect(usageCode([flag, '-0']), flag).toBe('OMNI_ERR_USAGE');
    }
  });

  it('--max-rows may equal --units, not exceed it', () => {
    expect(config(['--units', '8', '--max-rows', '8']).maxRows).toBe(8);
    expect(usageCode(['--units', '8', '--max-rows', '9'])).toBe('OMNI_ERR_USAGE');
  });

  it('a phase may offer up to a million arrivals, not one more', () => {
    expect(MAX_PHASE_ARRIVALS).toBe(1_000_000);
    expect(() => checkPhaseArrivals(1_000_000, 1, '1000000/s')).not.toThrow();
    expect(() => checkPhaseArrivals(1_000_001, 1, '1000001/s')).toThrow(UsageError);
    // One absolute rate over 20 s: two 10 s phases; 100,000/s offers exactly a million in each.
    expect(config(['--rates', '100000']).phaseS).toBe(10);
    expect(usageCode(['--rates', '100001'])).toBe('OMNI_ERR_USAGE');
  });

  it('refuses a rate listed twice (one chart line would hold both phases), however it is written', () => {
    expect(config(['--rates', '100,1x,200']).rates).toHaveLength(3);
    for (const rates of ['100,100', '100,100.0', '1x,2x,1X', '0.5x,.5x']) {
      expect(usageCode(['--rates', rates]), rates).toBe('OMNI_ERR_USAGE');
    }
  });

  it('refuses a --max-rows above what one native call takes for the layer (not a failed run later)', () => {
    // 2 x (16 + 16,384) floats of scratch a row: the default 512 MiB workspace holds 4,092 rows.
    const wide = ['--units', '8192', '--in-features', '16', '--out-features', '16384'];
    expect(config([...wide, '--max-rows', '4092']).maxRows).toBe(4092);
    expect(usageCode([...wide, '--max-rows', '4093'])).toBe('OMNI_ERR_USAGE');
  });

  // Number() rounds '1.0000000000000001' to 1 and '1e-400' to 0: a fraction the user wrote was
  // taken as a whole number without a word. Whole numbers in any decimal notation still pass.
  it.each([
    ['--threads', '1.0000000000000001'],
    ['--seed', '1e-400'],
    ['--seed', '4294967294.9999999999'],
    ['--units', '8.00000000000000001'],
  ])('%s %s: a fraction however small is not an integer', (flag, value) => {
    expect(usageCode([flag, value])).toBe('OMNI_ERR_USAGE');
  });

  it('integer flags take whole numbers written with a fraction or an exponent', () => {
    expect(
      config(['--threads', '2.0', '--requests', '1e1', '--units', '2.5e1', '--seed', '0e-400']),
    ).toMatchObject({ threads: 2, requests: 10, units: 25, seed: 0 });
  });

  // The bound resolveDevice takes: device 0 is the default one, not a mistake.
  it('--device takes 0 to MAX_DEVICE', () => {
    expect(config(['--device', '0']).device).toBe(0);
    expect(config(['--device', String(MAX_DEVICE)]).device).toBe(MAX_DEVICE);
    expect(usageCode(['--device', String(MAX_DEVICE + 1)])).toBe('OMNI_ERR_USAGE');
  });

  // Blank would be resolved as a folder named by its spaces (or the current one), not refused.
  it('--out must not be blank', () => {
    for (const out of ['', '  '])
      expect(usageCode(['--out', out]), JSON.stringify(out)).toBe('OMNI_ERR_USAGE');
  });

  it('takes no positional argument', () => {
    expect(usageCode(['sideways'])).toBe('OMNI_ERR_USAGE');
  });
});
