/**
 * Every public entry point answers hostile input with a coded error (OMNI_ERR_*), never an
 * uncoded TypeError or RangeError, a crash or a hang. Each argument, and each field of an
 * options argument (nested ones too), is replaced in turn by each value of one table
 * (fixtures/hostile-values.ts), and by a getter that throws. A call may also succeed where the
 * value is valid (undefined for an optional field): what it made is closed or released, and a
 * refused call is checked to have changed nothing the caller can see (the admission's report).
 * Not here: the error classes' constructors (RejectedError's snapshot too: they build an error,
 * they check no input; a Symbol message throws as Error itself does) and the CLI (test/cli-argv-fuzz.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BoundedAdmission,
  defineWorker,
  fromWire,
  hasCode,
  LinearRuntime,
  loadNativeLibrary,
  NativeContext,
  Runtime,
  resolveDevice,
  seededWeights,
  selectBackend,
  type ThreadEnds,
  toWire,
} from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { answerFor, ServeMetrics, serve, statusFor } from '../src/serve/index.js';
import { everyLinearOption, everyRuntimeOption, everyServeOption } from './fixtures/every-option.js';
import {
  HOSTILE,
  ownThrow,
  probe,
  type Uncoded,
  withField,
  withThrowingGetter,
} from './fixtures/hostile-values.js';

const ECHO = builtModuleUrl('test/fixtures/echo-worker.js');
const FIXTURE_LIBRARY = loadNativeLibrary('fixture').path;

type Args = () => unknown[];

function isPlain(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype;
}

/** Each field path of a plain options object, nested plain objects' fields included. */
function fieldPaths(value: Record<string, unknown>, prefix: readonly string[] = []): string[][] {
  const paths: string[][] = [];
  for (const key of Object.keys(value)) {
    paths.push([...prefix, key]);
    const inner = value[key];
    if (isPlain(inner)) paths.push(...fieldPaths(inner, [...prefix, key]));
  }
  return paths;
}

function replaced(
  base: Record<string, unknown>,
  path: readonly string[],
  make: (at: object, key: string) => object,
): object {
  const [key, ...rest] = path as [string, ...string[]];
  if (rest.length === 0) return make(base, key);
  return { ...base, [key]: replaced(base[key] as Record<string, unknown>, rest, make) };
}

/** Every hostile variant of a valid argument list, named: whole arguments, then fields. */
function variants(valid: Args): [string, Args][] {
  const out: [string, Args][] = [];
  const shape = valid();
  for (const [i, arg] of shape.entries()) {
    for (const [name, make] of HOSTILE) {
      out.push([`arg ${i} = ${name}`, () => Object.assign(valid(), { [i]: make() })]);
    }
    if (!isPlain(arg)) continue;
    for (const path of fieldPaths(arg)) {
      const at = `arg ${i}.${path.join('.')}`;
      for (const [name, make] of HOSTILE) {
        out.push([
          `${at} = ${name}`,
          () => {
            const args = valid();
            args[i] = replaced(args[i] as Record<string, unknown>, path, (o, k) => withField(o, k, make()));
            return args;
          },
        ]);
      }
      out.push([
        `${at} = throwing getter`,
        () => {
          const args = valid();
          args[i] = replaced(args[i] as Record<string, unknown>, path, withThrowingGetter);
          return args;
        },
      ]);
    }
  }
  return out;
}

interface SweepOptions {
  /** Closes or releases what a success made. */
  readonly ok?: (value: unknown) => unknown;
  /** After each call: a change a refused call must not make, named, or undefined. */
  readonly check?: () => string | undefined;
  /** Node's own codes docs/api.md says pass through (ERR_MODULE_NOT_FOUND for a missing worker). */
  readonly documented?: readonly string[];
  /** Once a call (and `ok`) ended: what it left behind, named, or undefined. */
  readonly after?: (args: unknown[]) => string | undefined;
  /** Only the variants of this field (fieldsOf): a sweep too long for one test, split. */
  readonly field?: string;
}

/** The field a variant replaces: `arg 0` (the whole argument) or `arg 0.a.b`. */
function fieldOf(name: string): string {
  return name.slice(0, name.indexOf(' = '));
}

/** The fields `variants(valid)` replaces, in order: one test each for a sweep split by field. */
function fieldsOf(valid: Args): string[] {
  return [...new Set(variants(valid).map(([name]) => fieldOf(name)))];
}

/**
 * A value that throws as it is read (a getter, a Proxy, a revoked one) may throw its own error
 * (docs/api.md: "a getter that throws rejects the call with its error"), except as a signal: a Proxy
 * of one is refused OMNI_ERR_INVALID_ARGUMENT.
 */
function passesThrough(name: string, documented: readonly string[]): (error: unknown) => boolean {
  const readThrows = /= (throwing getter|throwing Proxy|revoked Proxy)$/.test(name);
  const strict = /\.signal = (throwing|revoked) Proxy$/.test(name);
  return (error) => {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && documented.includes(code)) return true;
    return readThrows && !strict && ownThrow(error, name.endsWith('revoked Proxy'));
  };
}

/**
 * Runs `call` on every variant of `valid`: the uncoded outcomes and the changes, named. Without a
 * `check`, `together` variants run at once: a start sweep is mostly threads starting and exiting.
 */
async function sweep(
  valid: Args,
  call: (...args: unknown[]) => unknown,
  options: SweepOptions & { readonly together?: number } = {},
): Promise<string[]> {
  const found: string[] = [];
  const one = async ([name, args]: [string, Args]): Promise<void> => {
    let uncoded: Uncoded;
    let built: unknown[] = [];
    try {
      built = args();
      uncoded = await probe(() => call(...built), options.ok, passesThrough(name, options.documented ?? []));
    } catch (error) {
      uncoded = `building the case threw ${String(error)}`;
    }
    if (uncoded !== undefined) found.push(`${name}: ${uncoded}`);
    const left = options.after?.(built);
    if (left !== undefined) found.push(`${name}: left ${left}`);
    const changed = options.check?.();
    if (changed !== undefined) found.push(`${name}: changed ${changed}`);
  };
  const all = variants(valid).filter(
    ([name]) => options.field === undefined || fieldOf(name) === options.field,
  );
  const together = options.check === undefined ? (options.together ?? 1) : 1;
  for (let i = 0; i < all.length; i += together) {
    await Promise.all(all.slice(i, i + together).map(one));
  }
  return found.sort();
}

function sameReport(admission: BoundedAdmission): () => string | undefined {
  const before = JSON.stringify(admission.report());
  return () => {
    const now = JSON.stringify(admission.report());
    return now === before ? undefined : `report ${before} -> ${now}`;
  };
}

function releaseIfPermit(value: unknown): void {
  const permit = value as { ok?: unknown; release?: () => void };
  if (permit?.ok === true) permit.release?.();
}

describe('BoundedAdmission answers hostile input coded', () => {
  it('new BoundedAdmission(bounds)', async () => {
    const found = await sweep(
      () => [{ requests: 2, units: 10 }],
      (bounds) => new BoundedAdmission(bounds as never),
      { ok: (made) => (made as BoundedAdmission).close() },
    );
    expect(found).toEqual([]);
  });

  it('BoundedAdmission.attach(buffer)', async () => {
    const owner = new BoundedAdmission({ requests: 2 });
    const found = await sweep(
      () => [owner.buffer],
      (buffer) => BoundedAdmission.attach(buffer as never),
    );
    expect(found).toEqual([]);
    await owner.close();
  });

  it('tryAdmit(cost) and admit(cost, options), nothing changed by a refusal', async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 10 });
    const check = sameReport(admission);
    const found = [
      ...(await sweep(
        () => [1],
        (cost) => admission.tryAdmit(cost as never),
        { ok: releaseIfPermit, check },
      )),
      ...(await sweep(
        () => [1, { signal: new AbortController().signal, timeoutMs: 10_000 }],
        (cost, options) => admission.admit(cost as never, options as never),
        { ok: (permit) => (permit as { release(): void }).release(), check },
      )),
    ];
    expect(found).toEqual([]);
    await admission.close();
  });

  it('admit(cost, options) of a full admission: refused, aborted, timed out or closed', async () => {
    // Each case its own full admission, closed once the call is made: a case left with no signal
    // and no timeout waits, as documented, until the close rejects it (OMNI_ERR_CLOSED).
    let full = new BoundedAdmission({ requests: 1 });
    const found = await sweep(
      () => {
        full = new BoundedAdmission({ requests: 1 });
        full.tryAdmit(1);
        return [1, { signal: AbortSignal.abort(), timeoutMs: 0 }];
      },
      (cost, options) => {
        const admission = full;
        try {
          return admission.admit(cost as never, options as never);
        } finally {
          void admission.close();
        }
      },
    );
    expect(found).toEqual([]);
  });

  it('releaseClaim(claim), and reclaim(claim) never throws', async () => {
    const admission = new BoundedAdmission({ requests: 1000, units: 100_000 });
    const held: object[] = [];
    const found = await sweep(
      () => {
        const permit = admission.tryAdmit(1);
        if (!permit.ok) throw new Error('not admitted');
        const claim = { ...permit.toClaim() };
        held.push(claim);
        return [claim];
      },
      (claim) => admission.releaseClaim(claim as never),
    );
    // What a refused releaseClaim left held comes back; one a success released is not reclaimed.
    for (const claim of held) admission.reclaim(claim as never);
    expect(admission.report().depth).toBe(0);
    const check = sameReport(admission);
    const thrown = await sweep(
      () => [{ admission: 0, slot: 0, generation: 0, units: 0 }],
      (claim) => {
        const answer = admission.reclaim(claim as never);
        if (typeof answer !== 'boolean') throw new Error(`reclaim answered ${String(answer)}`);
      },
      { check },
    );
    expect(found).toEqual([]);
    expect(thrown).toEqual([]);
    await admission.close();
  });
});

describe('Runtime answers hostile input coded', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await Runtime.start({ worker: ECHO, threads: 1, admission: { requests: 4, units: 10 } });
  });
  afterAll(async () => {
    await runtime.close({ timeoutMs: 10_000 });
  });

  // One test per field: the whole sweep (~460 cases, ~90 of them starting a thread) took 30 s on
  // a busy machine and ran past the 60 s test timeout on one stalled 2 s in every 4.
  const startOptions = (threadEnds: ThreadEnds): unknown[] => [
    everyRuntimeOption(ECHO, threadEnds, {
      admission: { requests: 2, units: 10, wait: false },
      startTimeoutMs: 30_000,
    }),
  ];
  // Only the fields are read from these options (threadEnds' own as well): no start is made.
  const fields = fieldsOf(() => startOptions({ exited() {}, stopped() {} }));
  it.each(fields)('Runtime.start(options) with hostile %s, no thread left running', async (field) => {
    // Each case's own threadEnds: a start refused, or one closed, has told `stopped` of every
    // thread it made (docs/runtime.md: each thread's exit, then stopped), none when it made none.
    const told = new Map<object, { exited: number; stopped: number }>();
    const threadEnds = (): ThreadEnds => {
      const counts = { exited: 0, stopped: 0 };
      const ends = {
        exited() {
          counts.exited += 1;
        },
        stopped() {
          counts.stopped += 1;
        },
      };
      told.set(ends, counts);
      return ends;
    };
    let made = 0;
    const found = await sweep(
      () => startOptions(threadEnds()),
      (options) => Runtime.start(options as never),
      {
        ok: (runtime) => {
          made += 1;
          return (runtime as Runtime).close({ timeoutMs: 10_000 });
        },
        documented: ['ERR_MODULE_NOT_FOUND'],
        together: 8,
        field,
        after: ([options]) => {
          // The case's own object, read by descriptor: a getter or a Proxy of ours would throw.
          let ends: unknown;
          try {
            ends = Object.getOwnPropertyDescriptor(options, 'threadEnds')?.value;
          } catch {
            return undefined;
          }
          const counts = typeof ends === 'object' && ends !== null ? told.get(ends) : undefined;
          if (counts === undefined || counts.exited === 0 || counts.stopped === 1) return undefined;
          return `threads running: ${counts.exited} exited, stopped ${counts.stopped} times`;
        },
      },
    );
    expect(found).toEqual([]);
    // Not vacuous where a start succeeded with the case's own threadEnds (not one of the
    // hostile values): its threads were made, and told of their ends.
    if (made > 0 && !field.startsWith('arg 0.threadEnds')) {
      expect([...told.values()].some((c) => c.exited > 0 && c.stopped === 1)).toBe(true);
    }
  });

  it('run(input, options), nothing admitted by a refusal', async () => {
    const found = await sweep(
      () => [
        { value: 1 },
        { cost: 1, signal: new AbortController().signal, deadlineMs: 30_000, transfer: [] },
      ],
      (input, options) => runtime.run(input, options as never),
    );
    expect(found).toEqual([]);
    expect(runtime.report().depth).toBe(0);
  });

  it('close(options) on a runtime of its own', async () => {
    const own = await Runtime.start({ worker: ECHO, threads: 1 });
    const found = await sweep(
      () => [{ timeoutMs: 10_000 }],
      (options) => own.close(options as never),
    );
    await own.close({ timeoutMs: 10_000 });
    expect(found).toEqual([]);
  });
});

describe('LinearRuntime answers hostile input coded', () => {
  let linear: LinearRuntime;
  beforeAll(async () => {
    linear = await LinearRuntime.start({ backend: 'fixture', inFeatures: 4, outFeatures: 2, threads: 1 });
  });
  afterAll(async () => {
    await linear.close({ timeoutMs: 10_000 });
  });

  // One test per field, as Runtime.start's: whole, this sweep took 49 s on a stalled machine.
  const startOptions = (): unknown[] => [everyLinearOption(FIXTURE_LIBRARY, { startTimeoutMs: 30_000 })];
  it.each(fieldsOf(startOptions))('LinearRuntime.start(options) with hostile %s', async (field) => {
    const found = await sweep(startOptions, (options) => LinearRuntime.start(options as never), {
      ok: (made) => (made as LinearRuntime).close({ timeoutMs: 10_000 }),
      together: 8,
      field,
    });
    expect(found).toEqual([]);
  });

  it('run(x, options)', async () => {
    const found = await sweep(
      () => {
        const x = new Float32Array(8);
        const signal = new AbortController().signal;
        return [x, { rows: 2, cost: 2, signal, deadlineMs: 30_000, transfer: [x.buffer] }];
      },
      (x, options) => linear.run(x as never, options as never),
    );
    expect(found).toEqual([]);
    expect(linear.report().depth).toBe(0);
  });
});

describe('native entry points answer hostile input coded', () => {
  it('loadNativeLibrary, selectBackend, resolveDevice', async () => {
    const found = [
      ...(await sweep(
        () => ['fixture', { path: FIXTURE_LIBRARY }],
        (backend, options) => loadNativeLibrary(backend as never, options as never),
      )),
      ...(await sweep(
        () => [
          'fixture',
          { OMNI_BACKEND: 'fixture', OMNI_CUDA_DEVICE: '0' },
          { fixturePath: FIXTURE_LIBRARY, cudaPath: '/nonexistent/x.so' },
        ],
        (preference, env, options) => selectBackend(preference as never, env as never, options as never),
      )),
      ...(await sweep(
        () => [0, { OMNI_CUDA_DEVICE: '0' }],
        (option, env) => resolveDevice(option as never, env as never),
      )),
    ];
    expect(found).toEqual([]);
  });

  it('NativeContext.open and its calls', async () => {
    const library = loadNativeLibrary('fixture');
    const found = await sweep(
      () => [
        library,
        { device: 0, workspaceCount: 2, workspaceBytes: 1 << 20, env: { OMNI_CUDA_DEVICE: '0' } },
      ],
      (lib, options) => NativeContext.open(lib as never, options as never),
      { ok: (context) => (context as NativeContext).close() },
    );
    const context = NativeContext.open(library);
    const weights = seededWeights(4, 2);
    found.push(
      ...(await sweep(
        () => [weights.w, weights.b, 2, 4],
        (w, b, out, inF) => context.uploadWeights(w as never, b as never, out as never, inF as never),
      )),
      ...(await sweep(
        () => [new Float32Array(8), 2, new Float32Array(4)],
        (x, rows, out) => context.linearGelu(x as never, rows as never, out as never),
      )),
    );
    context.close();
    expect(found).toEqual([]);
  });
});

describe('the rest answer hostile input coded', () => {
  it('defineWorker, fromWire, toWire, statusFor, seededWeights', async () => {
    const found = [
      ...(await sweep(
        () => [() => 1, { init() {}, close() {} }],
        (handler, options) => defineWorker(handler as never, options as never),
      )),
      ...(await sweep(
        () => [
          {
            name: 'NativeError',
            message: 'm',
            code: 'OMNI_ERR_NATIVE',
            nativeCode: 3,
            fatal: true,
            fields: {},
          },
        ],
        (wire) => fromWire(wire as never),
      )),
      ...(await sweep(
        () => [new Error('m')],
        (error) => toWire(error),
      )),
      ...(await sweep(
        () => ['OMNI_ERR_REJECTED', 'requests'],
        (code, reason) => statusFor(code as never, reason as never),
      )),
      ...(await sweep(
        () => [4, 2, 1],
        (inF, outF, seed) => seededWeights(inF as never, outF as never, seed as never),
      )),
    ];
    expect(found).toEqual([]);
  });

  it('answerFor(error) and hasCode(error, code) never throw', async () => {
    const found = [
      ...(await sweep(
        () => [{ code: 'OMNI_ERR_NATIVE', message: 'm', nativeCode: 1 }],
        (error) => answerFor(error),
      )),
      ...(await sweep(
        () => [{ code: 'OMNI_ERR_NATIVE' }, 'OMNI_ERR_NATIVE'],
        (error, code) => hasCode(error, code as never),
      )),
    ];
    // Never throwing, even what a hostile value throws itself: a pass-through is a failure here.
    const strict: string[] = [];
    for (const [name, make] of HOSTILE) {
      for (const call of [() => answerFor(make()), () => hasCode(make(), make() as never)]) {
        try {
          call();
        } catch (error) {
          strict.push(`${name}: ${String(error)}`);
        }
      }
    }
    expect(found).toEqual([]);
    expect(strict).toEqual([]);
  });

  it('statusFor answers a status for any code: 500 for one it does not know, an inherited key too', () => {
    const answers: string[] = [];
    const codes = [
      ...HOSTILE.map(([name, make]) => [name, make()] as const),
      ['constructor', 'constructor'] as const,
    ];
    codes.push(['__proto__', '__proto__'], ['toString', 'toString']);
    for (const [name, code] of codes) {
      const status = statusFor(code as never);
      if (status !== 500) answers.push(`${name}: ${String(status)}`);
      // A reason it does not know is none: the code's own row.
      const withReason = statusFor('OMNI_ERR_TOO_LARGE', code as never);
      if (withReason !== 413) answers.push(`${name} as a reason: ${String(withReason)}`);
    }
    expect(answers).toEqual([]);
  });

  it('new ServeMetrics(source) and scrape()', async () => {
    const runtime = await Runtime.start({ worker: ECHO, threads: 1 });
    const found = await sweep(
      () => [{ report: () => runtime.report(), inflight: () => 0, connections: () => 1 }],
      async (source) => {
        const metrics = new ServeMetrics(source as never);
        await metrics.scrape();
      },
    );
    await runtime.close({ timeoutMs: 10_000 });
    // What a source function answers is checked as the scrape reads it (metric-figures.ts): a
    // report() of undefined is OMNI_ERR_INVALID_ARGUMENT too.
    expect(found).toEqual([]);
  });

  it('serve(runtime, options) and drain(options)', async () => {
    const linear = await LinearRuntime.start({
      backend: 'fixture',
      inFeatures: 4,
      outFeatures: 2,
      threads: 1,
    });
    const found = await sweep(
      () => [linear, everyServeOption(false)],
      (runtime, options) => serve(runtime as never, options as never),
      // Node's own errors pass through with their codes (docs/api.md, Errors): a host it cannot resolve.
      {
        documented: ['ENOTFOUND', 'EAI_AGAIN'],
        ok: (handle) => (handle as { drain(o: object): Promise<unknown> }).drain({ timeoutMs: 10_000 }),
      },
    );
    const handle = await serve(linear, { host: '127.0.0.1', port: 0, closeRuntime: false });
    found.push(
      ...(await sweep(
        () => [{ timeoutMs: 10_000 }],
        (options) => handle.drain(options as never),
      )),
    );
    await handle.drain({ timeoutMs: 10_000 });
    await linear.close({ timeoutMs: 10_000 });
    expect(found).toEqual([]);
  });
});
