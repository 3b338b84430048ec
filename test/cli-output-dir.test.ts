/** The --out folder, in-process: made (with its parents) and checked before any load runs. */

import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UsageError } from '../src/cli/args.js';
import { discardOutDir, prepareOutDir, removeOutputs, writeOutputs } from '../src/cli/output-dir.js';
import { CLI } from './fixtures/cli-process.js';

const scratch = mkdtempSync(join(tmpdir(), 'omni-out-dir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function usageError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('prepareOutDir', () => {
  it('makes a folder several levels deep, and takes one that exists', () => {
    const deep = join(scratch, 'a', 'b', 'c');
    expect(prepareOutDir(deep, ['results.json'])).toEqual({ dir: deep, created: join(scratch, 'a') });
    expect(statSync(deep).isDirectory()).toBe(true);
    expect(prepareOutDir(deep, ['results.json'])).toEqual({ dir: deep, created: undefined });
    expect(statSync(deep).isDirectory()).toBe(true);
  });

  it('takes output names that exist as regular files (they are replaced)', () => {
    const dir = join(scratch, 'existing');
    mkdirSync(dir);
    writeFileSync(join(dir, 'results.json'), '{}');
    expect(prepareOutDir(dir, ['results.json', 'latency.svg']).dir).toBe(dir);
    // Checked, not touched: replacing them is writeOutputs' job.
    expect(readFileSync(join(dir, 'results.json'), 'utf8')).toBe('{}');
  });

  it('refuses a folder under a regular file, and an output name taken by a folder', () => {
    const file = join(scratch, 'plain-file');
    writeFileSync(file, 'x');
    const blocked = join(scratch, 'blocked');
    mkdirSync(join(blocked, 'latency.svg'), { recursive: true });
    for (const err of [
      usageError(() => prepareOutDir(join(file, 'out'))),
      usageError(() => prepareOutDir(blocked, ['results.json', 'latency.svg'])),
    ]) {
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
    }
  });
  // In a child killed by SIGKILL: Node 20-24's recursive mkdirSync spun for ever there, deaf to SIGTERM.
  it.runIf(existsSync('/proc/self'))(
    'refuses a folder under /proc (a parent that exists answers ENOENT): a usage error, exit 2',
    async () => {
      const code = await new Promise<number | null>((resolve) => {
        execFile(
          process.execPath,
          [CLI, 'bench', '--out', '/proc/omni-out-dir/deep'],
          { timeout: 60_000, killSignal: 'SIGKILL' },
          (err) => resolve(err ? ((err as { code?: unknown }).code as number | null) : 0),
        );
      });
      expect(code).toBe(2);
    },
  );

  // Root passes access(W_OK) on sysfs's folders, where nothing can be made: the load ran, and
  // only then did the write fail. A user other than root is refused there by the mode bits.
  it.runIf(existsSync('/sys/kernel'))(
    'refuses a folder where nothing can be made, as root too (/sys/kernel)',
    () => {
      const err = usageError(() => prepareOutDir('/sys/kernel', ['results.json']));
      expect(err).toBeInstanceOf(UsageError);
      expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
    },
  );

  it('leaves nothing of its check in the folder', () => {
    const dir = join(scratch, 'checked');
    mkdirSync(dir);
    prepareOutDir(dir, ['results.json']);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses an output name it cannot even look at (a symbolic link to itself: ELOOP)', () => {
    // Found only when writing, after the whole run, it would cost the run its results.
    const dir = join(scratch, 'looped');
    mkdirSync(dir);
    symlinkSync('results.json', join(dir, 'results.json'));
    const err = usageError(() => prepareOutDir(dir, ['results.json']));
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).code).toBe('OMNI_ERR_USAGE');
  });
});

describe('writeOutputs', () => {
  it('writes every file under the folder and returns their paths', () => {
    const { dir } = prepareOutDir(join(scratch, 'written'));
    const paths = writeOutputs(dir, [
      ['results.json', '{"a":1}\n'],
      ['latency.svg', '<svg/>'],
    ]);
    expect(paths).toEqual([join(dir, 'results.json'), join(dir, 'latency.svg')]);
    expect(readFileSync(paths[0]!, 'utf8')).toBe('{"a":1}\n');
    expect(readFileSync(paths[1]!, 'utf8')).toBe('<svg/>');
  });
});

describe('discardOutDir', () => {
  it('removes the folders prepareOutDir made while they are empty, never one that existed', () => {
    const kept = join(scratch, 'kept');
    mkdirSync(kept);
    const out = prepareOutDir(join(kept, 'x', 'y'));
    discardOutDir(out);
    expect(existsSync(join(kept, 'x'))).toBe(false);
    expect(existsSync(kept)).toBe(true);
    discardOutDir(prepareOutDir(kept)); // it existed: left alone
    expect(existsSync(kept)).toBe(true);
  });

  it('cannot cost another run its results: a folder removed meanwhile is made again to write them', () => {
    // Run A made the folder, run B found it there, A failed and removed it while still empty.
    const a = prepareOutDir(join(scratch, 'shared-out'));
    const b = prepareOutDir(a.dir);
    discardOutDir(a);
    expect(existsSync(a.dir)).toBe(false);
    writeOutputs(b.dir, [['results.json', '{}']]);
    expect(readFileSync(join(b.dir, 'results.json'), 'utf8')).toBe('{}');
  });

  it("never takes a folder that existed for one it made ('new/../existing')", () => {
    const existing = join(scratch, 'existing-empty');
    mkdirSync(existing);
    const out = prepareOutDir(`${scratch}/not-made/../existing-empty`); // not join(): it would normalise
    expect(out).toEqual({ dir: existing, created: undefined });
    discardOutDir(out);
    expect(existsSync(existing)).toBe(true);
  });

  it('keeps a made folder that something was written to', () => {
    const out = prepareOutDir(join(scratch, 'used', 'inner'));
    writeOutputs(out.dir, [['results.json', '{}']]);
    discardOutDir(out);
    expect(readFileSync(join(out.dir, 'results.json'), 'utf8')).toBe('{}');
  });
});

describe('removeOutputs', () => {
  it('removes the names that exist, skips the missing, and throws any other failure with its own code', () => {
    const { dir } = prepareOutDir(join(scratch, 'removed'));
    writeOutputs(dir, [['a.svg', '<svg/>']]);
    removeOutputs(dir, ['a.svg', 'missing.svg']);
    expect(existsSync(join(dir, 'a.svg'))).toBe(false);
    mkdirSync(join(dir, 'folder.svg'));
    expect(() => removeOutputs(dir, ['folder.svg'])).toThrow(expect.objectContaining({ code: 'EISDIR' }));
  });
});
