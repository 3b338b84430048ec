/**
 * BoundedAdmission's bounds and buffer: construction and its checks, attach() and what it
 * refuses, and release of a permit (once, through Symbol.dispose and `using`). tryAdmit is in
 * test/admission-try-admit.test.ts, claims in test/admission-claims.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ID_I32, REQUESTS_I32, SLOTS_I32, UNIT_CEILING_F64 } from '../src/admission/layout.js';
import { type AdmissionReport, BoundedAdmission, type Permit } from '../src/index.js';
import { admitted, WORD_MODES } from './fixtures/admission-interleave.js';
import { thrown } from './fixtures/thrown.js';

const MAX = Number.MAX_SAFE_INTEGER;

function state(report: AdmissionReport): Pick<AdmissionReport, 'depth' | 'units' | 'rejected'> {
  return { depth: report.depth, units: report.units, rejected: report.rejected };
}

describe('BoundedAdmission construction', () => {
  it('starts empty, with a plain JSON-safe report', () => {
    const requestOnly = new BoundedAdmission({ requests: 3 }).report();
    expect(requestOnly).toEqual({
      depth: 0,
      capacity: 3,
      rejected: 0,
      units: 0,
      unitCapacity: null,
      waiting: 0,
      leaked: 0,
    });
    const withUnits = new BoundedAdmission({ requests: 2, units: 100 }).report();
    expect(withUnits).toEqual({
      depth: 0,
      capacity: 2,
      rejected: 0,
      units: 0,
      unitCapacity: 100,
      waiting: 0,
      leaked: 0,
    });
    for (const report of [requestOnly, withUnits]) {
      expect(JSON.parse(JSON.stringify(report))).toEqual(report);
      expect(Object.getPrototypeOf(report)).toBe(Object.prototype);
    }
  });

  it('accepts the largest bounds', () => {
    expect(new BoundedAdmission({ requests: 2 ** 29 - 1 }).report().capacity).toBe(2 ** 29 - 1);
    expect(new BoundedAdmission({ requests: 1, units: MAX }).report().unitCapacity).toBe(MAX);
    // 9 + 53 bits = 62: the widest pair that packs.
    expect(new BoundedAdmission({ requests: 511, units: MAX }).report()).toMatchObject({
      capacity: 511,
      unitCapacity: MAX,
    });
    // 29 + 33 bits = 62.
    expect(new BoundedAdmission({ requests: 2 ** 29 - 1, units: 2 ** 33 - 1 }).report().capacity).toBe(
      2 ** 29 - 1,
    );
  });

  const badNumbers: unknown[] = [
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    '4',
    4n,
  ];

  it.each([...badNumbers, 2 ** 29, MAX, undefined, null])('rejects requests = %s', (requests) => {
    const err = thrown(() => new BoundedAdmission({ requests } as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it.each([...badNumbers, MAX + 1, 2 ** 53, null])('rejects units = %s', (units) => {
    const err = thrown(() => new BoundedAdmission({ requests: 1, units } as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it.each([
    { requests: 512, units: MAX },
    { requests: 2 ** 29 - 1, units: 2 ** 33 },
    { requests: 2 ** 20, units: 2 ** 42 },
  ])('rejects a pair that needs more than 62 bits: %o', (bounds) => {
    const err = thrown(() => new BoundedAdmission(bounds));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it('reads each bound once: getters that answer once give the admission what they answered', () => {
    // A second read could answer otherwise than what was checked: here it throws.
    const once = <T>(value: T): (() => T) => {
      let read = false;
      return () => {
        if (read) throw new Error('a bound read twice');
        read = true;
        return value;
      };
    };
    const requests = once(3);
    const units = once(100);
    const bounds = {
      get requests() {
        return requests();
      },
      get units() {
        return units();
      },
    };
    expect(new BoundedAdmission(bounds).report()).toMatchObject({ capacity: 3, unitCapacity: 100 });
  });

  it.each([null, undefined, 5, 'requests', true])('rejects non-object bounds: %s', (bounds) => {
    const err = thrown(() => new BoundedAdmission(bounds as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });
});

describe('attach', () => {
  it.each([
    ['not a SharedArrayBuffer', () => new ArrayBuffer(4096)],
    // Its prototype chain says SharedArrayBuffer; reading its length threw an uncoded TypeError.
    ['only inheriting SharedArrayBuffer.prototype', () => Object.create(SharedArrayBuffer.prototype)],
    ['too small for the header', () => new SharedArrayBuffer(16)],
    ['zeroed (no admission made it)', () => new SharedArrayBuffer(4096)],
    [
      'cut short: fewer claim slots than its header says',
      () => {
        const whole = new BoundedAdmission({ requests: 8, units: 100 }).buffer;
        const cut = new SharedArrayBuffer(whole.byteLength - 8);
        new Uint8Array(cut).set(new Uint8Array(whole, 0, cut.byteLength));
        return cut;
      },
    ],
    [
      // Read through its own byteLength, it passed, and the claim table's views threw a RangeError.
      'cut short, whose own byteLength says it is whole',
      () => {
        const whole = new BoundedAdmission({ requests: 8, units: 100 }).buffer;
        const cut = new SharedArrayBuffer(whole.byteLength - 8);
        new Uint8Array(cut).set(new Uint8Array(whole, 0, cut.byteLength));
        return Object.defineProperty(cut, 'byteLength', { value: whole.byteLength });
      },
    ],
  ])('refuses a buffer %s with OMNI_ERR_INVALID_ARGUMENT', (_what, make) => {
    expect(thrown(() => BoundedAdmission.attach(make() as SharedArrayBuffer)).code).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });

  // What the buffer is, by its internal slots: its own byteLength and its prototype are the
  // caller's. Before, the first threw an uncoded TypeError (ArrayBuffer's getter refuses a
  // SharedArrayBuffer), the second the getter's own error, the third refused the buffer.
  it.each([
    [
      'inherits ArrayBuffer.prototype',
      (b: SharedArrayBuffer) => Object.setPrototypeOf(b, ArrayBuffer.prototype),
    ],
    [
      'has an own byteLength that throws',
      (b: SharedArrayBuffer) =>
        Object.defineProperty(b, 'byteLength', {
          get: () => {
            throw new Error('byteLength');
          },
        }),
    ],
    ['has no prototype', (b: SharedArrayBuffer) => Object.setPrototypeOf(b, null)],
  ])("attaches to an admission's buffer that %s", (_what, tamper) => {
    const owner = new BoundedAdmission({ requests: 2, units: 10 });
    const attached = BoundedAdmission.attach(tamper(owner.buffer) as SharedArrayBuffer);
    const permit = attached.tryAdmit(3);
    expect(owner.report()).toMatchObject({ depth: 1, units: 3 });
    if (permit.ok) permit.release();
    expect(owner.report()).toMatchObject({ depth: 0, units: 0 });
  });

  it('the package exports Permit as a type only: no caller can make one that gives back capacity', async () => {
    const exported = await import('../src/index.js');
    expect('Permit' in exported).toBe(false);
  });
});

describe('release', () => {
  describe.each(WORD_MODES)('%s', (_mode, units) => {
    const expectUnits = (n: number): number => (units === undefined ? 0 : n);

    it.each(['A then B', 'B then A'])('drops back to zero releasing %s', (order) => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 3);
      expect(state(admission.report())).toEqual({ depth: 1, units: expectUnits(3), rejected: 0 });
      const b = admitted(admission, 4);
      expect(state(admission.report())).toEqual({ depth: 2, units: expectUnits(7), rejected: 0 });
      const [first, second] = order === 'A then B' ? [a, b] : [b, a];
      first.release();
      expect(first.released).toBe(true);
      expect(second.released).toBe(false);
      expect(state(admission.report())).toEqual({ depth: 1, units: expectUnits(second.units), rejected: 0 });
      second.release();
      expect(state(admission.report())).toEqual({ depth: 0, units: 0, rejected: 0 });
      // Released capacity is really free again.
      const c = admitted(admission, 3);
      const d = admitted(admission, 7);
      expect(state(admission.report())).toEqual({ depth: 2, units: expectUnits(10), rejected: 0 });
      d.release();
      c.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0, waiting: 0, leaked: 0 });
    });

    it('throws OMNI_ERR_PERMIT_RELEASED on a second release and changes nothing', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 2);
      const b = admitted(admission, 3);
      a.release();
      const before = admission.report();
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.report()).toEqual(before);
      expect(thrown(() => a.toClaim()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.report()).toEqual(before);
      b.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('releases through Symbol.dispose once, and leaves a released permit alone', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 2);
      a[Symbol.dispose]();
      expect(a.released).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      a[Symbol.dispose]();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      const b = admitted(admission, 2);
      b.release();
      b[Symbol.dispose]();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('works with `using`', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      {
        using permit = admitted(admission, 4);
        expect(permit.released).toBe(false);
        expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(4) });
        {
          using inner = admitted(admission, 5);
          expect(admission.report()).toMatchObject({ depth: 2, units: expectUnits(9) });
          inner.release(); // released early: the disposal at scope exit does nothing
        }
        expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(4) });
      }
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      let escaped: Permit | undefined;
      expect(() => {
        using permit = admitted(admission, 1);
        escaped = permit;
        throw new Error('work failed');
      }).toThrow('work failed');
      expect(escaped?.released).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });
  });
});

describe('attach refuses a forged header', () => {
  // Kills: admission-buffer.ts isAdmissionBuffer without `slots >= 1` (M35) or without the
  // non-zero id check (M46); the zeroed buffer of test/admission.test.ts fails both at once.
  it.each([
    ['claims no slot', SLOTS_I32],
    ['has no id', ID_I32],
  ])('a copy of a real buffer that %s: OMNI_ERR_INVALID_ARGUMENT', (_what, index) => {
    const whole = new BoundedAdmission({ requests: 8, units: 100 }).buffer;
    const forged = new SharedArrayBuffer(whole.byteLength);
    new Uint8Array(forged).set(new Uint8Array(whole));
    expect(BoundedAdmission.attach(forged).report().capacity).toBe(8); // the copy itself attaches
    new Int32Array(forged)[index] = 0;
    expect(thrown(() => BoundedAdmission.attach(forged)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  // A header with bounds no admission has is not an admission's either: the constructor's
  // OMNI_ERR_INVALID_BOUND would blame bounds this caller never wrote. Nor is one whose unit
  // ceiling packs the word otherwise than its SHIFT says (2^53-1 units on a word packed for 100):
  // attached, that instance read the narrow word as the wide one.
  it.each([
    ['requests 0', 'Int32', REQUESTS_I32, 0],
    ['a NaN unit ceiling', 'Float64', UNIT_CEILING_F64, Number.NaN],
    ['a unit ceiling its SHIFT does not pack', 'Float64', UNIT_CEILING_F64, MAX],
  ] as const)('a copy of a real buffer with %s: OMNI_ERR_INVALID_ARGUMENT', (_what, view, index, value) => {
    const whole = new BoundedAdmission({ requests: 8, units: 100 }).buffer;
    const forged = new SharedArrayBuffer(whole.byteLength);
    new Uint8Array(forged).set(new Uint8Array(whole));
    const header = view === 'Int32' ? new Int32Array(forged, 0, 16) : new Float64Array(forged, 0, 8);
    header[index] = value;
    expect(thrown(() => BoundedAdmission.attach(forged)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
