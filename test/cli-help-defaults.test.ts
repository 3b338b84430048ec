/**
 * Every default and limit a command's --help states is what its flags parse to: the help is
 * written by hand beside the parser, so a default changed in one place and not the other would
 * tell users a value the command does not use.
 */
import { describe, expect, it } from 'vitest';
import { ADMISSION_HELP, parseAdmissionBenchArgs } from '../src/cli/admission-bench-command.js';
import { BENCH_HELP, parseBenchArgs } from '../src/cli/bench-options.js';
import { parseServeArgs, SERVE_HELP } from '../src/cli/serve-command.js';
import { httpTimeouts } from '../src/serve/request-timeout.js';

/** Each flag's help entry (its line and its indented continuations), keyed by the flag. */
function entries(help: string): Map<string, string> {
  const map = new Map<string, string>();
  let flag: string | undefined;
  for (const line of help.split('\n')) {
    const start = /^ {2}(--[a-z-]+)/.exec(line);
    if (start) {
      flag = start[1]!;
      map.set(flag, line.trim());
    } else if (flag !== undefined && /^ {4,}\S/.test(line)) {
      map.set(flag, `${map.get(flag)} ${line.trim()}`);
    } else {
      flag = undefined;
    }
  }
  return map;
}

/** What a flag's entry says its default is: the words after "(default" up to ";" or ")". */
function stated(help: string, flag: string): string {
  const entry = entries(help).get(flag);
  const found = entry === undefined ? null : /\(default:? ([^;)]*)/.exec(entry);
  if (found === null) throw new Error(`no default stated for ${flag}`);
  return found[1]!.trim();
}

describe('bench --help states the defaults bench runs with', () => {
  const c = parseBenchArgs([], {});
  if (c === 'help') throw new Error('unexpected help');

  it.each([
    ['--duration', c.durationS],
    ['--calibrate', c.calibrateS],
    ['--threads', c.threads],
    ['--deadline-ms', c.deadlineMs],
    ['--in-features', c.inFeatures],
    ['--out-features', c.outFeatures],
    ['--seed', c.seed],
  ])('%s: the number it states', (flag, value) => {
    expect(Number(stated(BENCH_HELP, flag))).toBe(value);
  });

  it('--rates, --requests, --units, --max-rows and --out: the rule each states', () => {
    const rates = c.rates.map((r) => `${r.value}${r.relative ? 'x' : ''}`).join(',');
    expect(entries(BENCH_HELP).get('--rates')).toContain(`default ${rates}`);
    expect(stated(BENCH_HELP, '--requests')).toBe('8 x threads');
    expect(c.requests).toBe(8 * c.threads);
    expect(stated(BENCH_HELP, '--units')).toBe('8 x requests');
    expect(c.units).toBe(8 * c.requests);
    expect(stated(BENCH_HELP, '--max-rows')).toBe('16, or --units when that is smaller');
    expect(c.maxRows).toBe(16);
    const small = parseBenchArgs(['--units', '9'], {});
    expect(small === 'help' ? undefined : small.maxRows).toBe(9);
    expect(stated(BENCH_HELP, '--out')).toBe('./bench-results');
    expect(c.outDir).toBe(`${process.cwd()}/bench-results`);
  });

  it('--max-rows: "at most 1 GiB (723 rows at 1024 features)": 723 is taken, 724 refused', () => {
    expect(entries(BENCH_HELP).get('--max-rows')).toContain('at most 1 GiB (723 rows at 1024 features)');
    const base = ['--units', '1000', '--in-features', '1024', '--out-features', '1'];
    const taken = parseBenchArgs([...base, '--max-rows', '723'], {});
    expect(taken === 'help' ? undefined : taken.maxRows).toBe(723);
    expect(() => parseBenchArgs([...base, '--max-rows', '724'], {})).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
  });

  it.each([
    ['--duration', 86_400],
    ['--calibrate', 3600],
  ])('%s: "at most %i" is taken, one more refused', (flag, most) => {
    expect(entries(BENCH_HELP).get(flag)).toContain(`at most ${most}`);
    expect(parseBenchArgs([flag, String(most)], {})).not.toBe('help');
    expect(() => parseBenchArgs([flag, String(most + 1)], {})).toThrow(
      expect.objectContaining({ code: 'OMNI_ERR_USAGE' }),
    );
  });
});

describe('serve --help states the defaults serve runs with', () => {
  const c = parseServeArgs([], {});
  if (c === 'help') throw new Error('unexpected help');

  it.each([
    ['--port', c.port],
    ['--threads', c.threads],
    ['--body-limit', c.bodyLimit],
    ['--in-features', c.inFeatures],
    ['--out-features', c.outFeatures],
    ['--drain-timeout-ms', c.drainTimeoutMs],
    ['--request-timeout-ms', c.requestTimeoutMs],
    ['--send-timeout-ms', c.sendTimeoutMs],
    ['--retry-after', c.retryAfterSeconds],
  ])('%s: the number it states', (flag, value) => {
    expect(Number(stated(SERVE_HELP, flag))).toBe(value);
  });

  it('--host, --requests, --units and --deadline-ms: what each states', () => {
    expect(stated(SERVE_HELP, '--host')).toBe(c.host);
    expect(stated(SERVE_HELP, '--requests')).toBe('4 x threads');
    expect(c.requests).toBe(4 * c.threads);
    const three = parseServeArgs(['--threads', '3'], {});
    expect(three === 'help' ? undefined : three.requests).toBe(12);
    expect(stated(SERVE_HELP, '--units')).toBe('none');
    expect(c.units).toBeUndefined();
    expect(stated(SERVE_HELP, '--deadline-ms')).toBe('none');
    expect(c.deadlineMs).toBeUndefined();
  });

  it('--request-timeout-ms: "headers: at most 60000" and "over 2147483647 (node\'s limit): none"', () => {
    const entry = entries(SERVE_HELP).get('--request-timeout-ms');
    expect(entry).toContain('headers: at most 60000');
    expect(entry).toContain("over 2147483647 (node's limit): none");
    expect(httpTimeouts(c.requestTimeoutMs).headers).toBe(60_000);
    expect(httpTimeouts(2_147_483_647)).toMatchObject({ request: 2_147_483_647, headers: 60_000 });
    expect(httpTimeouts(2_147_483_648)).toMatchObject({ request: 0, headers: 60_000 });
  });
});

describe('bench admission --help states the defaults it runs with', () => {
  const c = parseAdmissionBenchArgs([]);
  if (c === 'help') throw new Error('unexpected help');

  it.each([
    ['--threads', c.threads],
    ['--duration', c.durationS],
    ['--rounds', c.rounds],
  ])('%s: the number it states', (flag, value) => {
    expect(Number(stated(ADMISSION_HELP, flag))).toBe(value);
  });

  it('without --cost, request-only (no units per pair)', () => {
    expect(entries(ADMISSION_HELP).get('--cost')).toContain('without it, request-only');
    expect(c.cost).toBe(0);
  });
});
