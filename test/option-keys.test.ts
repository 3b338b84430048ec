/**
 * A misspelt set-up option is OMNI_ERR_INVALID_ARGUMENT, not a silent default, for every options
 * object taken once at set-up (serve()'s and drain()'s are in serve-options.test.ts), refused
 * before anything starts; and every documented key is still taken. The "every key" objects are
 * typed `Required<...>`: a key the interface gains must be added here, and a list in src/ that
 * missed it would make the call throw.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BOUNDS_KEYS } from '../src/admission/bounds.js';
import { MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import {
  type AdmissionBounds,
  BoundedAdmission,
  defineWorker,
  LinearRuntime,
  type LinearRuntimeOptions,
  NativeContext,
  type NativeOpenOptions,
  Runtime,
  type RuntimeAdmissionOptions,
  type RuntimeOptions,
  type SelectOptions,
  seededWeights,
  selectBackend,
  type WorkerOptions,
} from '../src/index.js';
import { defaultLibraryPath, loadNativeLibrary } from '../src/native/index.js';
import { checkCallKeys, checkOptionKeys } from '../src/option-keys.js';
import { builtModuleUrl } from '../src/paths.js';
import { everyLinearOption } from './fixtures/every-option.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';
import { INVOKED, newControl } from './fixtures/runtime-control.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { thrown, thrownCode } from './fixtures/thrown.js';

const INIT_WORKER = builtModuleUrl('test/fixtures/runtime-init-worker.js');
const INVALID = 'OMNI_ERR_INVALID_ARGUMENT';

const closing: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((r) => r.close()));
});

describe('checkOptionKeys', () => {
  const known = { requests: true, units: true } as const;

  it('refuses an own enumerable key the list lacks, whatever its value', () => {
    expect(thrownCode(() => checkOptionKeys('bounds', { requests: 1, unit: 5 }, known))).toBe(INVALID);
    // Explicitly undefined is as misspelt: the bound meant is still never given.
    expect(thrownCode(() => checkOptionKeys('bounds', { requests: 1, unit: undefined }, known))).toBe(
      INVALID,
    );
  });

  it('names the key a misspelt one was likely meant to be, as the README says, and none for another word', () => {
    // The suggestion is what the refusal is for: the one line tells the fix.
    const message = (options: object): string =>
      String((thrown(() => checkOptionKeys('bounds', options, known)) as Error).message);
    expect(message({ unit: 5 })).toContain('(did you mean units?)');
    expect(message({ Request: 5 })).toContain('(did you mean requests?)');
    expect(message({ capacity: 5 })).not.toContain('did you mean');
  });

  it('refuses options that are not an object', () => {
    for (const options of [null, 1, 'requests']) {
      expect([options, thrownCode(() => checkOptionKeys('bounds', options, known))]).toEqual([
        options,
        INVALID,
      ]);
    }
  });

  // Each list is an object literal: asked with `in`, it would answer for its prototype's names
  // too, and a `constructor` or `toString` option would pass as known, unread and unrefused.
  it("refuses a key that only the list's prototype has (constructor, toString)", () => {
    for (const key of ['constructor', 'toString', 'hasOwnProperty']) {
      expect([key, thrownCode(() => checkOptionKeys('bounds', { [key]: 1 }, known))]).toEqual([key, INVALID]);
    }
  });

  it('takes known keys set to undefined, and leaves symbols, inherited and hidden keys alone', () => {
    const inherited = Object.create({ unit: 5 }) as object;
    const hidden = Object.defineProperty({}, 'unit', { value: 5, enumerable: false });
    for (const options of [
      {},
      { requests: 1, units: undefined },
      { [Symbol('unit')]: 5 },
      inherited,
      hidden,
    ]) {
      expect(() => checkOptionKeys('bounds', options, known)).not.toThrow();
    }
  });

  // run()'s options take checkCallKeys, which walks the keys without making an array: it must
  // refuse exactly the keys this refuses, and leave alone exactly what this leaves alone.
  it('checkCallKeys, the per-call check, refuses and passes the same objects', () => {
    const inheritedUnknown = Object.create({ unit: 5 }) as object;
    const ownAfterInherited = Object.assign(Object.create({ requests: 1 }) as object, { unit: 5 });
    const hidden = Object.defineProperty({}, 'unit', { value: 5, enumerable: false });
    for (const options of [
      {},
      { requests: 1, units: undefined },
      { unit: 5 },
      { requests: 1, unit: undefined },
      { constructor: 1 },
      { [Symbol('unit')]: 5 },
      inheritedUnknown,
      ownAfterInherited,
      hidden,
    ]) {
      const outcome = (check: typeof checkCallKeys): unknown => {
        try {
          check('bounds', options, known);
          return 'taken';
        } catch (err) {
          return (err as { code?: unknown }).code;
        }
      };
      expect([options, outcome(checkCallKeys)]).toEqual([options, outcome(checkOptionKeys)]);
    }
    expect(thrownCode(() => checkCallKeys('bounds', { unit: 5 }, known))).toBe(INVALID);
  });
});

describe('BoundedAdmission bounds', () => {
  it('a key that is no bound is OMNI_ERR_INVALID_ARGUMENT, not a request-only admission', () => {
    const bounds = { requests: 4, unit: 100 } as unknown as AdmissionBounds;
    expect(thrown(() => new BoundedAdmission(bounds)).code).toBe(INVALID);
    // A spread is what TypeScript's excess-property check cannot see.
    const extra = { unitz: 100 };
    expect(thrownCode(() => new BoundedAdmission({ requests: 4, ...extra }))).toBe(INVALID);
  });

  it("a class's options read through its prototype's getters are taken, not refused", () => {
    class Bounds {
      get requests(): number {
        return 4;
      }
      get units(): number {
        return 100;
      }
    }
    expect(new BoundedAdmission(new Bounds()).report().unitCapacity).toBe(100);
  });

  it('every bound is still taken, and an admission attached to it has the same', () => {
    const bounds = { requests: 4, units: 100 } satisfies Required<AdmissionBounds>;
    expect(Object.keys(bounds).sort()).toEqual(Object.keys(BOUNDS_KEYS).sort());
    const admission = new BoundedAdmission(bounds);
    expect(admission.report().unitCapacity).toBe(100);
    expect(BoundedAdmission.attach(admission.buffer).report().unitCapacity).toBe(100);
  });
});

describe('Runtime', () => {
  it('an unknown start option, or admission key, rejects before any thread starts', async () => {
    const control = newControl();
    const workerData = { control: control.buffer };
    const misspelt: unknown[] = [
      { worker: INIT_WORKER, workerData, thread: 2 },
      { worker: INIT_WORKER, workerData, deadlineMS: undefined },
      { worker: INIT_WORKER, workerData, admission: { requests: 2, unit: 10 } },
      { worker: INIT_WORKER, workerData, admission: { requests: 2, wiat: true } },
    ];
    for (const options of misspelt) {
      expect([options, await codeOf(Runtime.start(options as RuntimeOptions))]).toEqual([options, INVALID]);
    }
    // Each thread's init counts itself: none ran.
    expect(Atomics.load(control, INVOKED)).toBe(0);
  });

  it('every start option is still taken; a misspelt close option leaves the runtime running', async () => {
    const admission = { requests: 2, units: 10, wait: true } satisfies Required<RuntimeAdmissionOptions>;
    const options = {
      worker: INIT_WORKER,
      workerData: { tag: 'all' },
      threads: 1,
      admission,
      deadlineMs: 60_000,
      idleTimeout: 0,
      resourceLimits: {
        maxYoungGenerationSizeMb: 16,
        maxOldGenerationSizeMb: 256,
        codeRangeSizeMb: 64,
        stackSizeMb: 4,
      },
      startTimeoutMs: 60_000,
      threadEnds: { exited: (id: number) => ends.push(id), stopped: () => ends.push('stopped') },
    } satisfies Required<RuntimeOptions>;
    const ends: (number | 'stopped')[] = [];
    const runtime = await Runtime.start(options);
    closing.push(runtime);
    expect(runtime.report().unitCapacity).toBe(10);
    expect(await runtime.run(null, { cost: 10 })).toBe('all');
    expect(await codeOf(runtime.close({ timeout: 0 } as never))).toBe(INVALID);
    expect(runtime.report().state).toBe('ready');
    expect((await runtime.close({ timeoutMs: undefined })).clean).toBe(true);
    expect(ends).toEqual([expect.any(Number), 'stopped']);
  });
});

describe('LinearRuntime.start', () => {
  it('an unknown option is refused before any library is loaded', async () => {
    // Loading first would have been OMNI_ERR_LIBRARY_NOT_FOUND.
    const libraries = { fixture: '/nonexistent/libomni_fixture.so' };
    for (const options of [
      { backend: 'fixture', libraries, workspaceSize: 1 << 20 },
      { backend: 'fixture', libraries, admission: { requests: 2, unit: 10 } },
      { backend: 'fixture', libraries: { ...libraries, cpu: 'x.so' } },
      // Runtime.start's, but LinearRuntime sets it itself (its native contexts' reclaim).
      { backend: 'fixture', libraries, threadEnds: { exited() {}, stopped() {} } },
    ]) {
      expect([options, await codeOf(LinearRuntime.start(options as LinearRuntimeOptions))]).toEqual([
        options,
        INVALID,
      ]);
    }
  });

  it('every option is still taken', async () => {
    // Every option set (the fixture is typed Required), these as this test needs them.
    const options = everyLinearOption(defaultLibraryPath('fixture'), {
      libraries: { fixture: defaultLibraryPath('fixture'), cuda: defaultLibraryPath('cuda') },
      weights: seededWeights(4, 2, 3),
      admission: { requests: 2, units: 8, wait: false },
      idleTimeout: 0,
      resourceLimits: { stackSizeMb: 4 },
    });
    const lr = await LinearRuntime.start(options);
    closing.push(lr);
    expect(lr.report().unitCapacity).toBe(8);
    expect(lr.inFeatures).toBe(4);
  });
});

describe('an unknown key beside a bad bound', () => {
  it('is OMNI_ERR_INVALID_ARGUMENT, in a nested object too (as the errors table says)', async () => {
    const bad = { unit: 5 } as object;
    expect(thrownCode(() => new BoundedAdmission({ requests: 0, ...bad }))).toBe(INVALID);
    const worker = INIT_WORKER;
    const runtimes: unknown[] = [
      // Above the runtime's claim slots: OMNI_ERR_INVALID_BOUND had the key not come first.
      { worker, admission: { requests: MAX_CLAIM_SLOTS + 1, ...bad } },
      { worker, admission: { requests: 0 }, resourceLimits: { maxOldSpaceSizeMb: 64 } },
    ];
    for (const options of runtimes) {
      expect([options, await codeOf(Runtime.start(options as RuntimeOptions))]).toEqual([options, INVALID]);
    }
    const linear: unknown[] = [
      { backend: 'fixture', admission: { requests: 0 }, workspaceSize: 1 << 20 },
      { backend: 'fixture', admission: { requests: 0 }, libraries: { cpu: 'x.so' } },
    ];
    for (const options of linear) {
      expect([options, await codeOf(LinearRuntime.start(options as LinearRuntimeOptions))]).toEqual([
        options,
        INVALID,
      ]);
    }
  });
});

describe('native set-up options', () => {
  const fixture = fixtureLibrary();

  it('NativeContext.open refuses an unknown option before opening anything', () => {
    // Armed: an omni_open reached would fail its first allocation (OMNI_ERR_NATIVE).
    fixture.faults.failAllocAfter(1);
    try {
      const options = { workspaceSize: 1 << 20 } as NativeOpenOptions;
      expect(thrownCode(() => NativeContext.open(fixture.lib, options))).toBe(INVALID);
    } finally {
      fixture.faults.failAllocAfter(0);
    }
  });

  it('NativeContext.open takes every option', () => {
    const options = {
      device: 0,
      workspaceCount: 2,
      workspaceBytes: 1 << 20,
      env: {},
    } satisfies Required<NativeOpenOptions>;
    NativeContext.open(fixture.lib, options).close();
  });

  it('an env map is open-ended: any variable in it is taken, not refused as a key', () => {
    const env = { OMNI_CUDA_DEVICE: '0', PATH: '/nowhere', OMNI_BACKEND: 'fixture' };
    NativeContext.open(fixture.lib, { env }).close();
    expect(selectBackend(undefined, env).backend).toBe('fixture');
  });

  it('selectBackend and loadNativeLibrary refuse an unknown option before loading', () => {
    const missing = '/nonexistent/libomni_fixture.so';
    const select = { fixturePath: missing, cuda: missing } as SelectOptions;
    expect(thrownCode(() => selectBackend('fixture', {}, select))).toBe(INVALID);
    expect(thrownCode(() => loadNativeLibrary('fixture', { path: missing, file: missing } as never))).toBe(
      INVALID,
    );
  });

  it('selectBackend and loadNativeLibrary take every option', () => {
    const select = {
      device: 0,
      fixturePath: defaultLibraryPath('fixture'),
      cudaPath: defaultLibraryPath('cuda'),
    } satisfies Required<SelectOptions>;
    expect(selectBackend('fixture', {}, select).backend).toBe('fixture');
    expect(loadNativeLibrary('fixture', { path: defaultLibraryPath('fixture') }).backend).toBe('fixture');
  });
});

describe('defineWorker', () => {
  it('a misspelt hook is refused where the worker is written', () => {
    const options = { init() {}, onClose() {} } as WorkerOptions;
    expect(thrownCode(() => defineWorker(() => 1, options))).toBe(INVALID);
  });

  it('every hook is still taken', () => {
    const options = { init() {}, close() {} } satisfies Required<WorkerOptions>;
    expect(defineWorker(() => 1, options).close).toBe(options.close);
  });
});
