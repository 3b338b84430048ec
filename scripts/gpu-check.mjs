#!/usr/bin/env node
import { LinearRuntime } from '../dist/src/index.js';
// GPU acceptance check for the CUDA backend (run by scripts/gpu-check.sh after the build; uses dist/).
//   1. parity: CUDA and the CPU fixture against the float64 TypeScript reference on several shapes,
//      per-output tolerance 2(in+1)u(sum|x w| + |b|) + 8u|y| + 1e-7 with u = 2^-24 (the float32
//      dot-product bound; the same one test/native-numerics.test.ts uses), plus the max |cuda - fixture|;
//      then on data whose sums are exact in float32 in any order, where only GELU may round, so a
//      lost, repeated or misplaced term shows at any K (the bound above grows with K: at K = 16384
//      it would pass the loss of a whole 16-wide K slice); then infinite and NaN pre-activations,
//      which must give GELU's limits (-0, +inf) and NaN exactly;
//   2. no residue: repeated calls on reused, larger and evicted-then-re-created workspaces are
//      bit-identical; then the counters (allocations, stream syncs, workspaces, evictions, calls)
//      a fixed call sequence leaves on each backend, against what the workspace rule in omni.h
//      predicts;
//   3. GFLOP/s of CUDA beside the fixture, per call including the staging copies;
//   4. requests/s through LinearRuntime (the native worker) on CUDA and on the fixture.
// Exit codes: 0 pass, 1 a check failed, 2 the CUDA device could not be opened, 3 a library could
// not be loaded.
// --dry-run runs every step with the fixture standing in for CUDA (smaller shapes), so the script
// itself can be exercised on a machine without a GPU.
// --sanitize (gpu-check.sh runs it under compute-sanitizer's memcheck, racecheck and initcheck)
// runs only small parity shapes that end every tile of the kernel part-way, the limits' extremes,
// and workspaces freed and re-created, then the verdict: an out-of-bounds or racing access that
// leaves the numbers right shows only there.
import {
  FixtureFaults,
  loadNativeLibrary,
  NativeContext,
  NativeStatus,
  referenceLinearGelu,
  resolveDevice,
  seededFloats,
} from '../dist/src/native/index.js';

const U = 2 ** -24;
let failures = 0;
const fail = (what) => {
  failures++;
  console.log(`FAIL ${what}`);
};
// The check runs once, unattended: a call that throws (a CUDA error on one shape) is a FAIL line
// for that step, and every later step still runs and reports.
function attempt(what, step) {
  try {
    step();
  } catch (err) {
    fail(`${what}: ${err?.code ?? err?.name} ${err?.message ?? err}`);
  }
}

const dryRun = process.argv.includes('--dry-run');
const sanitize = process.argv.includes('--sanitize');
// A library that cannot be loaded (missing, built for another driver or glibc, another ABI) is a
// setup failure, not a failed check: gpu-check.sh's exit 3, with the reason on one line.
function load(backend) {
  try {
    return loadNativeLibrary(backend);
  } catch (err) {
    console.log(`gpu-check: cannot load the ${backend} library: ${err.code} ${err.message}`);
    process.exit(3);
  }
}
const fixtureLib = load('fixture');
const cudaLib = dryRun ? fixtureLib : load('cuda');
if (dryRun) console.log('gpu-check: DRY RUN, the fixture stands in for CUDA');
if (sanitize) console.log('gpu-check: SANITIZE, small shapes only');
console.log(
  `libraries: ${fixtureLib.path} (ABI ${fixtureLib.abiVersion}), ${cudaLib.path} (ABI ${cudaLib.abiVersion})`,
);
const device = resolveDevice(undefined, process.env);
let cuda;
try {
  cuda = NativeContext.open(cudaLib, { device, workspaceCount: 2 });
} catch (err) {
  console.log(`gpu-check: cannot open CUDA device ${device} (OMNI_CUDA_DEVICE): ${err.code} ${err.message}`);
  process.exit(2);
}
const fixture = NativeContext.open(fixtureLib, { workspaceCount: 2 });
new FixtureFaults(fixtureLib); // asserts the fixture carries its hooks (a fixture built from these sources)
console.log(`opened CUDA device ${device}`);

function data([rows, inF, outF], seed) {
  return {
    x: seededFloats(seed, rows * inF, 2),
    w: seededFloats(seed + 1, outF * inF, 1 / Math.sqrt(inF)),
    b: seededFloats(seed + 2, outF, 0.5),
  };
}

function worstRatio(got, ref, absSum) {
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const tol = 2 * absSum.inPlus1 * U * absSum.values[i] + 8 * U * Math.abs(ref[i]) + 1e-7;
    worst = Math.max(worst, Math.abs(got[i] - ref[i]) / tol);
  }
  return worst;
}

// ---- 1. parity ------------------------------------------------------------------------------
// The kernel works in 64 x 64 output tiles over K slices of 16: shapes below end each part-way,
// and the last three reach the limits (1024 row tiles, MAX_FEATURES inputs, 256 column tiles).
const LIMITS = [
  [65536, 8, 8],
  [2, 16384, 3],
  [2, 3, 16384],
];
const PARITY = sanitize
  ? [[1, 1, 1], [3, 5, 7], [64, 16, 64], [65, 17, 65], [130, 33, 129], ...LIMITS]
  : [
      [1, 1, 1],
      [3, 5, 7],
      [37, 200, 70],
      [64, 64, 64],
      [65, 1023, 129],
      [256, 1024, 1024],
      ...(dryRun ? [] : [[513, 4096, 300]]),
      ...LIMITS,
    ];
console.log('\nparity (ratio = worst |error| / tolerance, must be <= 1)');
for (const [i, shape] of PARITY.entries())
  attempt(`parity ${shape}`, () => {
    const [rows, inF, outF] = shape;
    const { x, w, b } = data(shape, 1000 + i);
    cuda.uploadWeights(w, b, outF, inF);
    fixture.uploadWeights(w, b, outF, inF);
    const yc = cuda.linearGelu(x, rows);
    const yf = fixture.linearGelu(x, rows);
    const ref = referenceLinearGelu(x, rows, w, b, outF, inF);
    const values = new Float64Array(rows * outF);
    for (let r = 0; r < rows; r++)
      for (let o = 0; o < outF; o++) {
        let s = Math.abs(b[o]);
        for (let k = 0; k < inF; k++) s += Math.abs(x[r * inF + k] * w[o * inF + k]);
        values[r * outF + o] = s;
      }
    const absSum = { inPlus1: inF + 1, values };
    const rc = worstRatio(yc, ref, absSum);
    const rf = worstRatio(yf, ref, absSum);
    let diff = 0;
    for (let j = 0; j < yc.length; j++) diff = Math.max(diff, Math.abs(yc[j] - yf[j]));
    const ok = rc <= 1 && rf <= 1 && yc.every(Number.isFinite);
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${rows} x ${inF} -> ${outF}: cuda ${rc.toFixed(3)}, fixture ${rf.toFixed(3)}, max |cuda - fixture| ${diff.toExponential(2)}`,
    );
    if (!ok) fail(`parity ${shape}`);
  });

// Multiples of 1/4 (x, |x| <= 1) times multiples of 1/16 (w, |w| <= 1/8) are multiples of 1/64,
// and so is b: every partial sum is one below 2^18 in magnitude, exact in float32 in any order.
// Only GELU rounds then: erff's few ulp times |v| / 2, and the products' ulps of |y|.
function exactData([rows, inF, outF], seed) {
  const snap = (a, step) => a.map((v) => Math.round(v / step) * step);
  return {
    x: snap(seededFloats(seed, rows * inF, 1), 1 / 4),
    w: snap(seededFloats(seed + 1, outF * inF, 1 / 8), 1 / 16),
    b: snap(seededFloats(seed + 2, outF, 0.5), 1 / 64),
  };
}
if (!sanitize) {
  console.log('\nexact sums (ratio = worst |error| / (2u|v| + 8u|y| + 1e-7), must be <= 1)');
  for (const [i, shape] of [
    [130, 1023, 129],
    [3, 16384, 70],
    [65536, 8, 8],
  ].entries())
    attempt(`exact sums ${shape}`, () => {
      const [rows, inF, outF] = shape;
      const { x, w, b } = exactData(shape, 2000 + 10 * i);
      cuda.uploadWeights(w, b, outF, inF);
      fixture.uploadWeights(w, b, outF, inF);
      const ys = [cuda.linearGelu(x, rows), fixture.linearGelu(x, rows)];
      const ref = referenceLinearGelu(x, rows, w, b, outF, inF);
      const worst = [0, 0];
      for (let r = 0; r < rows; r++)
        for (let o = 0; o < outF; o++) {
          let v = b[o];
          for (let k = 0; k < inF; k++) v += x[r * inF + k] * w[o * inF + k];
          const j = r * outF + o;
          const tol = 2 * U * Math.abs(v) + 8 * U * Math.abs(ref[j]) + 1e-7;
          for (const n of [0, 1]) worst[n] = Math.max(worst[n], Math.abs(ys[n][j] - ref[j]) / tol);
        }
      const ok = worst[0] <= 1 && worst[1] <= 1;
      console.log(
        `${ok ? 'ok  ' : 'FAIL'} ${rows} x ${inF} -> ${outF}: cuda ${worst[0].toFixed(3)}, fixture ${worst[1].toFixed(3)}`,
      );
      if (!ok) fail(`exact sums ${shape}`);
    });
}

// Pre-activations at float32's ends: -inf, +inf and NaN inputs, sums of finite terms that
// overflow each way, large finite ones. GELU's limits are -0 and v (the formula's -inf * 0 would be
// NaN); both backends must give exactly these, -0 included, over a 4-row tile and a 3-row tail.
if (!sanitize) {
  attempt('extremes', () => {
    const pairs = [
      [-Infinity, 0],
      [Infinity, 0],
      [NaN, 0],
      [-3e38, -3e38],
      [3e38, 3e38],
      [-1e30, 0],
      [1e30, 0],
    ];
    const x = new Float32Array(pairs.flat());
    const want = [-0, Infinity, NaN, -0, Infinity, -0, Math.fround(1e30)];
    const w = new Float32Array([1, 1]);
    const b = new Float32Array([0]);
    cuda.uploadWeights(w, b, 1, 2);
    fixture.uploadWeights(w, b, 1, 2);
    const got = { cuda: Array.from(cuda.linearGelu(x, 7)), fixture: Array.from(fixture.linearGelu(x, 7)) };
    const ok = Object.values(got).every((y) => y.every((v, i) => Object.is(v, want[i])));
    const show = (y) => y.map((v) => (Object.is(v, -0) ? '-0' : String(v))).join(' ');
    console.log(`\nextremes: ${ok ? 'ok' : 'FAIL'} (cuda ${show(got.cuda)}, fixture ${show(got.fixture)})`);
    if (!ok) fail('extremes');
  });
}

function finish() {
  attempt('cuda stats', () => console.log(`\ncuda stats: ${JSON.stringify(cuda.stats())}`));
  cuda.close();
  fixture.close();
  console.log(failures === 0 ? '\ngpu-check: PASS' : `\ngpu-check: ${failures} check(s) FAILED`);
  process.exit(failures === 0 ? 0 : 1);
}

// ---- sanitize: workspaces and weights freed and re-created ------------------------------------
// A one-entry cache alternating two shapes frees device and pinned buffers on every call, and each
// upload frees the weights it replaces; the repeated call must be bit-identical.
if (sanitize) {
  attempt('sanitize: evictions', () => {
    const a = data([3, 33, 65], 61);
    const other = data([70, 17, 130], 62);
    const single = NativeContext.open(cudaLib, { device, workspaceCount: 1 });
    try {
      single.uploadWeights(a.w, a.b, 65, 33);
      const first = single.linearGelu(a.x, 3);
      let same = true;
      for (let i = 0; i < 3; i++) {
        single.uploadWeights(other.w, other.b, 130, 17);
        single.linearGelu(other.x, 70);
        single.uploadWeights(a.w, a.b, 65, 33);
        if (!Buffer.from(single.linearGelu(a.x, 3).buffer).equals(Buffer.from(first.buffer))) same = false;
      }
      const s = single.stats();
      console.log(`\nsanitize evictions: ${same ? 'ok' : 'FAIL'} (evictions ${s.workspaceEvictions})`);
      if (!same) fail('sanitize: repeated calls differ');
      if (s.workspaceEvictions < 6)
        fail(`sanitize: expected at least 6 evictions, saw ${s.workspaceEvictions}`);
    } finally {
      single.close();
    }
  });
  finish();
}

// ---- 2. no residue on reused workspaces ------------------------------------------------------
// A one-entry cache, so every other call below evicts: odd rounds run the 96-row call in a larger
// workspace that just held 200 rows of noise; even rounds force it to be freed and re-created (a
// call with other features takes the only slot in between).
attempt('no residue', () => {
  const shape = [96, 512, 384];
  const { x, w, b } = data(shape, 77);
  const other = data([96, 512, 100], 88);
  const single = NativeContext.open(cudaLib, { device, workspaceCount: 1 });
  try {
    single.uploadWeights(w, b, shape[2], shape[1]);
    const first = single.linearGelu(x, 96);
    const noise = seededFloats(78, 96 * 512, 100);
    let same = true;
    for (let i = 0; i < 20; i++) {
      single.linearGelu(noise, 96); // same workspace, other data
      if (i % 2 === 0) {
        single.linearGelu(seededFloats(79 + i, 200 * 512, 100), 200); // a 256-row workspace replaces it
      } else {
        single.uploadWeights(other.w, other.b, 100, 512);
        single.linearGelu(other.x, 96); // other features: evicts; the next call re-creates
        single.uploadWeights(w, b, shape[2], shape[1]);
      }
      const again = single.linearGelu(x, 96);
      if (!Buffer.from(again.buffer).equals(Buffer.from(first.buffer))) same = false;
    }
    const s = single.stats();
    console.log(
      `\nno residue: ${same ? 'ok' : 'FAIL'} (evictions ${s.workspaceEvictions}, cached ${s.cachedWorkspaces})`,
    );
    if (!same) fail('repeated calls differ');
    if (s.cachedWorkspaces > 1) fail('workspace count bound exceeded');
    if (s.workspaceEvictions < 20) fail(`expected at least 20 evictions, saw ${s.workspaceEvictions}`);
  } finally {
    single.close();
  }
  const y = new Float32Array(96 * shape[2]);
  const bad = cudaLib.raw.omni_linear_gelu(null, x, x.length, 96, y, y.length);
  if (bad !== NativeStatus.INVALID_ARGUMENT) fail(`raw call with a null context returned ${bad}`);
});

// The counters are the ABI's, not the fixture's: each backend must count the events the workspace
// rule in omni.h predicts for this sequence (a two-entry cache of 16 -> 8 features), measured from
// just after open (where the fixture also counts its simulated stream).
attempt('counters', () => {
  const expected = {
    allocations: 2 + 3 * 4, // the weights (w, b), then three workspaces of four buffers each
    streamSyncs: 1 + 5 + 1, // the upload, each call, the one eviction
    cachedWorkspaces: 2,
    workspaceBytes: 2 * (16 + 32) * (16 + 8) * 4, // capacities 16 and 32 are left
    workspaceEvictions: 1,
    calls: 5,
  };
  const { x, w, b } = data([20, 16, 8], 91);
  const run = (lib) => {
    const ctx = NativeContext.open(lib, { device, workspaceCount: 2 });
    try {
      const s0 = ctx.stats();
      ctx.uploadWeights(w, b, 8, 16);
      // 5 rows: a miss (capacity 8); 7: a hit; 9: a miss (16); 20: a miss (32) that evicts the
      // least recently used (8); 3: a hit on the smallest that fits (16).
      for (const rows of [5, 7, 9, 20, 3]) ctx.linearGelu(x.subarray(0, rows * 16), rows);
      const s = ctx.stats();
      return {
        allocations: s.allocations - s0.allocations,
        streamSyncs: s.streamSyncs - s0.streamSyncs,
        cachedWorkspaces: s.cachedWorkspaces,
        workspaceBytes: s.workspaceBytes,
        workspaceEvictions: s.workspaceEvictions - s0.workspaceEvictions,
        calls: s.calls - s0.calls,
      };
    } finally {
      ctx.close();
    }
  };
  const want = JSON.stringify(expected);
  let ok = true;
  for (const [label, lib] of [
    ['cuda', cudaLib],
    ['fixture', fixtureLib],
  ]) {
    const got = JSON.stringify(run(lib));
    if (got !== want) {
      ok = false;
      fail(`counters on ${label}: ${got}, want ${want}`);
    }
  }
  if (ok) console.log(`counters: ok (cuda and fixture: ${want})`);
});

// ---- 3. throughput ---------------------------------------------------------------------------
function timeCalls(ctx, x, rows, out, minMs) {
  ctx.linearGelu(x, rows, out); // warm: workspace created, kernel loaded
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < minMs || n < 3) {
    ctx.linearGelu(x, rows, out);
    n++;
    t = performance.now();
  }
  return (t - t0) / n;
}
console.log(
  '\n| shape (rows x in -> out) | cuda ms/call | cuda GFLOP/s | fixture ms/call | fixture GFLOP/s | speedup |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const shape of [
  [64, 1024, 1024],
  ...(dryRun
    ? []
    : [
        [1024, 1024, 1024],
        [4096, 4096, 4096],
      ]),
])
  attempt(`throughput ${shape}`, () => {
    const [rows, inF, outF] = shape;
    const { x, w, b } = data(shape, 5);
    const out = new Float32Array(rows * outF);
    const ctxs = [cuda, fixture];
    for (const c of ctxs) c.uploadWeights(w, b, outF, inF);
    const msC = timeCalls(cuda, x, rows, out, dryRun ? 100 : 1000);
    const msF = timeCalls(fixture, x, rows, out, dryRun ? 100 : 1000);
    const gf = (ms) => ((2 * rows * inF * outF) / (ms * 1e6)).toFixed(1);
    console.log(
      `| ${rows} x ${inF} -> ${outF} | ${msC.toFixed(3)} | ${gf(msC)} | ${msF.toFixed(2)} | ${gf(msF)} | ${(msF / msC).toFixed(1)}x |`,
    );
  });

// ---- 4. requests/s through the runtime ------------------------------------------------------
// LinearRuntime (admission + piscina + the native worker, each thread with its own context) on
// CUDA and on the fixture, one shape, closed loop with 1 and 16 calls in flight, beside the direct
// NativeContext call on this thread (requests/s = 1000 / ms per call). First checks that one output
// through each runtime is bit-identical to the direct call on the same backend.
async function closedLoop(call, inFlight, ms) {
  let done = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (performance.now() - t0 < ms) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return done / ((performance.now() - t0) / 1000);
}
{
  const shape = dryRun ? [8, 256, 256] : [64, 1024, 1024];
  const [rows, inF, outF] = shape;
  const { x, w, b } = data(shape, 41);
  const weights = { w, b, inFeatures: inF, outFeatures: outF };
  // A dry run exercises the script, its figures mean nothing: short cells keep the tests quick.
  const ms = dryRun ? 50 : 2000;
  const threads = 2;
  console.log(
    `\nrequests/s through LinearRuntime, ${rows} x ${inF} -> ${outF}, ${threads} threads (closed loop, ${ms} ms per cell)`,
  );
  console.log(
    '| backend | direct req/s (main thread) | runtime req/s, 1 in flight | runtime req/s, 16 in flight | 16 in flight / direct |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const [label, backend, ctx] of [
    [dryRun ? 'cuda (fixture stand-in)' : 'cuda', dryRun ? 'fixture' : 'cuda', cuda],
    ['fixture', 'fixture', fixture],
  ]) {
    let lr;
    try {
      lr = await LinearRuntime.start({ backend, device, threads, weights, admission: { requests: 32 } });
    } catch (err) {
      fail(`LinearRuntime.start on ${label}: ${err.code} ${err.message}`);
      continue;
    }
    try {
      ctx.uploadWeights(w, b, outF, inF);
      const direct = ctx.linearGelu(x, rows);
      const viaRuntime = await lr.run(x);
      if (!Buffer.from(viaRuntime.buffer).equals(Buffer.from(direct.buffer)))
        fail(`${label}: runtime output differs from the direct call`);
      if (lr.backend !== backend) fail(`${label}: the runtime chose ${lr.backend}`);
      const out = new Float32Array(rows * outF);
      const directPerSecond = 1000 / timeCalls(ctx, x, rows, out, ms);
      const call = () => lr.run(x);
      await closedLoop(call, 16, Math.min(ms, 200)); // warm both threads
      const one = await closedLoop(call, 1, ms);
      const sixteen = await closedLoop(call, 16, ms);
      console.log(
        `| ${label} | ${directPerSecond.toFixed(0)} | ${one.toFixed(0)} | ${sixteen.toFixed(0)} | ${(sixteen / directPerSecond).toFixed(2)}x |`,
      );
      const report = lr.report();
      if (report.state !== 'ready' || report.failed !== 0)
        fail(`${label}: runtime ${report.state}, ${report.failed} failed`);
    } catch (err) {
      fail(`${label} through the runtime: ${err.code} ${err.message}`);
    } finally {
      await lr.close();
    }
  }
}

finish();
