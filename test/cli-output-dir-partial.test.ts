/**
 * writeOutputs when a write fails part-way (a full disk: ENOSPC after some bytes): the file an
 * earlier run left stays whole, and nothing half-written is left beside it. A plain
 * writeFileSync truncated results.json first, so a failed write left a broken one.
 */
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';

/** The next write under `failIn` writes half its data, then fails as a full disk does. */
let failIn: string | undefined;
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>();
  const writeFileSync: typeof real.writeFileSync = (file, data, options) => {
    if (failIn !== undefined && String(file).startsWith(failIn)) {
      failIn = undefined;
      real.writeFileSync(file, String(data).slice(0, String(data).length >> 1), options);
      throw Object.assign(new Error(`ENOSPC: no space left on device, write '${String(file)}'`), {
        code: 'ENOSPC',
      });
    }
    real.writeFileSync(file, data, options);
  };
  return { ...real, writeFileSync, default: { ...real, writeFileSync } };
});

const { prepareOutDir, writeOutputs } = await import('../src/cli/output-dir.js');

const scratch = fs.mkdtempSync(join(tmpdir(), 'omni-out-partial-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe('writeOutputs, a write that fails part-way', () => {
  it("leaves the earlier run's file whole and no partial file, and throws the write's code", () => {
    const { dir } = prepareOutDir(join(scratch, 'full-disk'));
    const earlier = `${JSON.stringify({ run: 'earlier', phases: [1, 2, 3] })}\n`;
    writeOutputs(dir, [['results.json', earlier]]);
    failIn = dir;
    const later = `${JSON.stringify({ run: 'later', phases: [4, 5, 6, 7] })}\n`;
    expect(() => writeOutputs(dir, [['results.json', later]])).toThrow(
      expect.objectContaining({ code: 'ENOSPC' }),
    );
    expect(failIn, 'the write under test was made').toBeUndefined();
    expect(fs.readFileSync(join(dir, 'results.json'), 'utf8')).toBe(earlier);
    expect(fs.readdirSync(dir)).toEqual(['results.json']);
  });

  it('writes a new file whole or not at all', () => {
    const { dir } = prepareOutDir(join(scratch, 'first-run'));
    failIn = dir;
    expect(() => writeOutputs(dir, [['results.json', '{"a":[1,2,3,4]}\n']])).toThrow(
      expect.objectContaining({ code: 'ENOSPC' }),
    );
    expect(fs.readdirSync(dir)).toEqual([]);
    writeOutputs(dir, [['results.json', '{"a":[1,2,3,4]}\n']]);
    expect(fs.readFileSync(join(dir, 'results.json'), 'utf8')).toBe('{"a":[1,2,3,4]}\n');
  });

  it('keeps the permissions of the file it replaces, as writing into it did', () => {
    const { dir } = prepareOutDir(join(scratch, 'private'));
    const path = join(dir, 'results.json');
    fs.writeFileSync(path, '{}\n');
    fs.chmodSync(path, 0o600);
    writeOutputs(dir, [['results.json', '{"c":3}\n']]);
    expect(fs.statSync(path).mode & 0o777).toBe(0o600);
    expect(fs.readFileSync(path, 'utf8')).toBe('{"c":3}\n');
  });

  it('writes through a link to a regular file, as before, leaving the link in place', () => {
    const { dir } = prepareOutDir(join(scratch, 'linked'));
    const target = join(scratch, 'kept-elsewhere.json');
    fs.writeFileSync(target, '{}\n');
    fs.symlinkSync(target, join(dir, 'results.json'));
    writeOutputs(dir, [['results.json', '{"b":2}\n']]);
    expect(fs.lstatSync(join(dir, 'results.json')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(target, 'utf8')).toBe('{"b":2}\n');
  });

  it('keeps the special bits of the file it replaces too (a sticky bit)', () => {
    const { dir } = prepareOutDir(join(scratch, 'sticky'));
    const path = join(dir, 'results.json');
    fs.writeFileSync(path, '{}\n');
    fs.chmodSync(path, 0o1640);
    writeOutputs(dir, [['results.json', '{"s":1}\n']]);
    expect(fs.statSync(path).mode & 0o7777).toBe(0o1640);
  });

  it('writes through a link whose target is not there yet, making it, as writeFileSync did', () => {
    const { dir } = prepareOutDir(join(scratch, 'dangling'));
    const target = join(scratch, 'made-elsewhere.json');
    fs.symlinkSync(target, join(dir, 'results.json'));
    writeOutputs(dir, [['results.json', '{"d":4}\n']]);
    expect(fs.lstatSync(join(dir, 'results.json')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(target, 'utf8')).toBe('{"d":4}\n');
  });

  it("follows a chain of relative links to a target not there yet, from each link's folder", () => {
    const { dir } = prepareOutDir(join(scratch, 'chain'));
    fs.mkdirSync(join(scratch, 'chain-end'));
    fs.symlinkSync('../chain-middle.json', join(dir, 'results.json'));
    fs.symlinkSync('chain-end/made.json', join(scratch, 'chain-middle.json'));
    writeOutputs(dir, [['results.json', '{"e":6}\n']]);
    expect(fs.lstatSync(join(dir, 'results.json')).isSymbolicLink()).toBe(true);
    expect(fs.lstatSync(join(scratch, 'chain-middle.json')).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(join(scratch, 'chain-end', 'made.json'), 'utf8')).toBe('{"e":6}\n');
  });

  it('refuses a link that loops with its ELOOP, as writeFileSync did, and leaves it in place', () => {
    const { dir } = prepareOutDir(join(scratch, 'loop'));
    const path = join(dir, 'results.json');
    fs.symlinkSync(path, path);
    expect(() => writeOutputs(dir, [['results.json', '{}\n']])).toThrow(
      expect.objectContaining({ code: 'ELOOP' }),
    );
    expect(fs.lstatSync(path).isSymbolicLink()).toBe(true);
    expect(fs.readdirSync(dir)).toEqual(['results.json']);
  });

  // The partial file is made beside the link's target: beside the link, the rename crossed
  // filesystems (EXDEV). Runs where a second filesystem is at hand (/dev/shm, a tmpfs).
  const shm = '/dev/shm';
  const crossDevice = fs.existsSync(shm) && fs.statSync(shm).dev !== fs.statSync(scratch).dev;
  it.skipIf(!crossDevice)('writes through a link to a file on another filesystem', () => {
    const { dir } = prepareOutDir(join(scratch, 'cross'));
    const elsewhere = fs.mkdtempSync(join(shm, 'omni-out-cross-'));
    try {
      const target = join(elsewhere, 'results.json');
      fs.writeFileSync(target, '{}\n');
      fs.symlinkSync(target, join(dir, 'results.json'));
      writeOutputs(dir, [['results.json', '{"x":5}\n']]);
      expect(fs.readFileSync(target, 'utf8')).toBe('{"x":5}\n');
      expect(fs.readdirSync(elsewhere)).toEqual(['results.json']);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
