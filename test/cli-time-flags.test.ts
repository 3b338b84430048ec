/**
 * Every time flag reads a number as --deadline-ms and x-omni-deadline-ms do (decimal.ts
 * decimalValue): text too small for a double ('1e-400') is not the 0 Number() makes of it. The
 * serve command's times take any number > 0 (docs/http.md): --request-timeout-ms and
 * --send-timeout-ms refused 1e-400 as 0, --drain-timeout-ms read it as 0 (abandon at once), and
 * read -1e-400, a negative, as 0 too. serve() takes Number.MIN_VALUE for each.
 */
import { describe, expect, it } from 'vitest';
import { parseBenchArgs } from '../src/cli/bench-options.js';
import { parseServeArgs, type ServeConfig } from '../src/cli/serve-command.js';
import { httpTimeouts } from '../src/serve/request-timeout.js';
import { thrownCode } from './fixtures/thrown.js';

function serveConfig(argv: string[]): ServeConfig {
  const config = parseServeArgs(argv, {});
  if (config === 'help') throw new Error('unexpected help');
  return config;
}

const TIMES = [
  ['--request-timeout-ms', 'requestTimeoutMs'],
  ['--send-timeout-ms', 'sendTimeoutMs'],
  ['--drain-timeout-ms', 'drainTimeoutMs'],
] as const;

describe("serve's time flags read as --deadline-ms does", () => {
  it.each(TIMES)('%s 1e-400 is the shortest time there is, not refused or 0', (flag, field) => {
    for (const ms of ['1e-400', '+1e-400', '0.0000001e-400']) {
      expect(serveConfig([flag, ms])[field], ms).toBe(Number.MIN_VALUE);
    }
  });

  it.each(TIMES)('%s -1e-400 is a negative number: refused, not read as 0', (flag) => {
    expect(thrownCode(() => parseServeArgs([flag, '-1e-400'], {}))).toBe('OMNI_ERR_USAGE');
  });

  it('--drain-timeout-ms 0 however written is 0 (abandon at once)', () => {
    for (const ms of ['0', '-0', '0e-400', '-0.0e5']) {
      expect(serveConfig(['--drain-timeout-ms', ms]).drainTimeoutMs, ms).toBe(0);
    }
  });

  // node:http counts whole milliseconds: the shortest request timeout it keeps is 1 ms, as for 0.5.
  it("a request timeout of Number.MIN_VALUE is node:http's 1 ms, as 0.5 is", () => {
    expect(httpTimeouts(Number.MIN_VALUE)).toEqual(httpTimeouts(0.5));
    expect(httpTimeouts(Number.MIN_VALUE)).toEqual({ request: 1, headers: 1, check: 1 });
  });
});

describe("bench's seconds read the same way", () => {
  it('--duration and --calibrate 1e-400 are > 0 as written, -1e-400 is refused', () => {
    const config = parseBenchArgs(['--duration', '1e-400', '--calibrate', '1e-400'], {});
    expect(config !== 'help' && [config.durationS, config.calibrateS]).toEqual([
      Number.MIN_VALUE,
      Number.MIN_VALUE,
    ]);
    expect(thrownCode(() => parseBenchArgs(['--duration', '-1e-400'], {}))).toBe('OMNI_ERR_USAGE');
  });
});

describe('--rates reads its numbers the same way', () => {
  it('1e-400 (per second, or x capacity) is a rate > 0, as written; -1e-400 is refused', () => {
    const config = parseBenchArgs(['--rates', '1e-400,1e-400x'], {});
    expect(config !== 'help' && config.rates).toEqual([
      { value: Number.MIN_VALUE, relative: false },
      { value: Number.MIN_VALUE, relative: true },
    ]);
    expect(thrownCode(() => parseBenchArgs(['--rates', '-1e-400'], {}))).toBe('OMNI_ERR_USAGE');
  });
});
