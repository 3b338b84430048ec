/**
 * LinearRuntime.run over a view into a larger buffer: structured clone would copy the whole
 * buffer per call (a 2-row view into a 64 MiB batch cost ~97 ms, not ~1 ms), so the rows alone
 * are sent. What arrives in the worker is read back by a probe worker.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { LinearRuntime, Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';

const IN = 4;
let runtime: Runtime | undefined;

async function probe(): Promise<LinearRuntime> {
  runtime ??= await Runtime.start({ worker: builtModuleUrl('test/fixtures/linear-view-probe-worker.js') });
  return new LinearRuntime(runtime, { inFeatures: IN, outFeatures: IN, backend: 'fixture' });
}

afterAll(async () => {
  await runtime?.close();
});

/** A batch of `rows` rows, row r holding r * 10 + column. */
function batch(rows: number, memory?: SharedArrayBuffer): Float32Array {
  const x = memory === undefined ? new Float32Array(rows * IN) : new Float32Array(memory);
  for (let i = 0; i < x.length; i++) x[i] = Math.floor(i / IN) * 10 + (i % IN);
  return x;
}

interface Arrived {
  readonly bufferBytes: number;
  readonly byteOffset: number;
  readonly shared: boolean;
  readonly values: number[];
}

async function arrived(lr: LinearRuntime, x: Float32Array, transfer?: ArrayBuffer[]): Promise<Arrived> {
  const y = await lr.run(x, transfer === undefined ? undefined : { transfer });
  return { bufferBytes: y[0]!, byteOffset: y[1]!, shared: y[2] === 1, values: [...y.subarray(3)] };
}

describe('LinearRuntime.run sends a view into a larger buffer as its rows alone', () => {
  it('a 2-row view into 1,024 rows: 2 rows arrive, and the caller keeps its batch', async () => {
    const lr = await probe();
    const whole = batch(1024);
    const view = whole.subarray(5 * IN, 7 * IN);
    const got = await arrived(lr, view);
    expect(got).toEqual({ bufferBytes: 2 * IN * 4, byteOffset: 0, shared: false, values: [...view] });
    // Nothing of the caller's was moved.
    expect(whole.length).toBe(1024 * IN);
    expect(view.length).toBe(2 * IN);
  });

  it('a view at offset 0 that ends early is a part too', async () => {
    const lr = await probe();
    const view = batch(8).subarray(0, IN);
    expect((await arrived(lr, view)).bufferBytes).toBe(IN * 4);
  });

  it('a view with a transfer list naming another buffer: its rows alone, the list as given', async () => {
    const lr = await probe();
    const view = batch(16).subarray(IN, 2 * IN);
    const other = new ArrayBuffer(8);
    expect((await arrived(lr, view, [other])).bufferBytes).toBe(IN * 4);
    expect(other.byteLength).toBe(0); // moved, as asked
  });

  it('a compact array goes as it is (cloned, the caller keeps it)', async () => {
    const lr = await probe();
    const x = batch(3);
    expect(await arrived(lr, x)).toEqual({
      bufferBytes: 3 * IN * 4,
      byteOffset: 0,
      shared: false,
      values: [...x],
    });
    expect(x.length).toBe(3 * IN);
  });

  it('a view whose buffer the caller moves goes whole, as asked', async () => {
    const lr = await probe();
    const whole = batch(64);
    const view = whole.subarray(2 * IN, 3 * IN);
    const values = [...view];
    const got = await arrived(lr, view, [whole.buffer as ArrayBuffer]);
    expect(got).toEqual({ bufferBytes: 64 * IN * 4, byteOffset: 2 * IN * 4, shared: false, values });
    expect(whole.length).toBe(0); // detached: it was moved
  });

  it('a view over shared memory goes as it is: a clone shares it, nothing is copied', async () => {
    const lr = await probe();
    const memory = new SharedArrayBuffer(32 * IN * 4);
    const view = batch(32, memory).subarray(IN, 3 * IN);
    const got = await arrived(lr, view);
    expect(got).toEqual({ bufferBytes: 32 * IN * 4, byteOffset: IN * 4, shared: true, values: [...view] });
  });

  // Its own properties are the caller's: run() reads x by its internal slots, as it reads its
  // length. Before, reading them threw out of run() (not a rejection, and no outcome counted),
  // and a lie decided what was sent.
  it('a view whose own buffer, byteLength, slice or constructor throw or lie: its rows alone arrive', async () => {
    const lr = await probe();
    const boom = (): never => {
      throw new Error('read');
    };
    const tampered: [string, PropertyDescriptor][] = [
      ['buffer', { get: boom }],
      ['byteLength', { get: boom }],
      ['slice', { value: boom }],
      ['constructor', { get: boom }], // slice's species
      ['buffer', { value: null }],
      ['byteLength', { value: 16 * IN * 4 }], // the whole buffer's: it would go whole
      ['slice', { value: () => new Float32Array(IN) }], // one zero row instead of x's two
    ];
    for (const [key, descriptor] of tampered) {
      const view = batch(16).subarray(IN, 3 * IN);
      const values = [...view];
      Object.defineProperty(view, key, descriptor);
      const got = await arrived(lr, view);
      expect([key, got]).toEqual([key, { bufferBytes: 2 * IN * 4, byteOffset: 0, shared: false, values }]);
    }
  });

  // Before, the list was read twice: once to decide on the copy, once more (by Runtime.run) as
  // the list to move. A list whose answers change between reads then moved the caller's whole
  // buffer after paying for the rows' copy, or cloned the whole buffer it had said it moved.
  it.each([
    ["x's buffer, then another", 'whole', 'other'],
    ["another buffer, then x's", 'other', 'whole'],
  ] as const)('a list answering %s: what one read says moves', async (_what, first, later) => {
    const lr = await probe();
    const whole = batch(64);
    const other = new ArrayBuffer(8);
    const view = whole.subarray(2 * IN, 3 * IN);
    const values = [...view];
    const buffers = { whole: whole.buffer as ArrayBuffer, other };
    let reads = 0;
    const transfer = new Proxy([buffers[first]], {
      get: (target, key, receiver) =>
        key === '0' ? buffers[reads++ === 0 ? first : later] : Reflect.get(target, key, receiver),
    });
    const got = await arrived(lr, view, transfer);
    if (first === 'whole') {
      // x's buffer moved as the one read said, sent whole as asked; the other one untouched.
      expect(got).toEqual({ bufferBytes: 64 * IN * 4, byteOffset: 2 * IN * 4, shared: false, values });
      expect([whole.length, other.byteLength]).toEqual([0, 8]);
    } else {
      // Its rows alone, the other buffer moved; the caller keeps its batch.
      expect(got).toEqual({ bufferBytes: IN * 4, byteOffset: 0, shared: false, values });
      expect([whole.length, other.byteLength]).toEqual([64 * IN, 0]);
    }
    expect(reads).toBe(1);
  });

  it("a view whose buffer's own byteLength throws or lies: its rows alone arrive", async () => {
    const lr = await probe();
    const tampered: PropertyDescriptor[] = [
      {
        get: (): never => {
          throw new Error('read');
        },
      },
      { value: 2 * IN * 4 }, // the view's own size: x would seem compact and go whole
    ];
    for (const descriptor of tampered) {
      const view = batch(16).subarray(IN, 3 * IN);
      const values = [...view];
      Object.defineProperty(view.buffer, 'byteLength', descriptor);
      expect(await arrived(lr, view)).toEqual({
        bufferBytes: 2 * IN * 4,
        byteOffset: 0,
        shared: false,
        values,
      });
    }
  });

  it("a transfer list's own includes is the caller's, never called: the rows alone arrive", async () => {
    const lr = await probe();
    const tampered: PropertyDescriptor[] = [
      {
        value: (): never => {
          throw new Error('own includes');
        },
      },
      { value: () => true }, // says x's buffer is moved: x would go whole, and not moved
    ];
    for (const descriptor of tampered) {
      const view = batch(16).subarray(IN, 3 * IN);
      const values = [...view];
      const transfer = Object.defineProperty([] as ArrayBuffer[], 'includes', descriptor);
      expect(await arrived(lr, view, transfer)).toEqual({
        bufferBytes: 2 * IN * 4,
        byteOffset: 0,
        shared: false,
        values,
      });
    }
  });

  it('a transfer list that throws as it is read: run() rejects with what threw, counted invalid', async () => {
    const lr = await probe();
    const thrown = new Error('trap');
    const transfer = new Proxy([] as ArrayBuffer[], {
      get: () => {
        throw thrown;
      },
    });
    const before = lr.report().invalid;
    let made: Promise<Float32Array> | undefined;
    expect(() => {
      made = lr.run(batch(16).subarray(IN, 2 * IN), { transfer });
    }).not.toThrow();
    await expect(made).rejects.toBe(thrown);
    expect(lr.report().invalid).toBe(before + 1);
  });
});
