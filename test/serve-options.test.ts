/**
 * serve()'s options as documented on ServeOptions: their ranges (InvalidArgumentError, before
 * anything listens), and that each one reaches the behaviour it names (Retry-After, the drain
 * timeout of close(), closeRuntime, the address of an IPv6 listener).
 */
import { networkInterfaces } from 'node:os';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MAX_FEATURES } from '../src/native/abi.js';
import {
  type DrainOptions,
  type Served,
  type ServeHandle,
  type ServeOptions,
  serve,
} from '../src/serve/index.js';
import { codeOf } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  type Gated,
  type GatedOptions,
  gatedForTest,
  serveForTest,
  servers,
} from './fixtures/serve-harness.js';

let unserved: Promise<Gated> | undefined;

/** A host without an IPv6 loopback (some containers) cannot listen on ::1 at all. */
const hasIpv6Loopback = Object.values(networkInterfaces()).some((list) =>
  list?.some((a) => a.internal && a.family === 'IPv6' && a.address === '::1'),
);

afterEach(closeServed);

afterAll(async () => {
  await (await unserved)?.lr.close();
});

/** 'listening' (the server kept, for afterEach to close) or the code serve() rejected with. */
function outcomeOf(serving: Promise<ServeHandle>): Promise<unknown> {
  return serving.then(
    (s) => {
      servers.push(s);
      return 'listening';
    },
    (err: { code?: unknown }) => err.code,
  );
}

function gated(options: GatedOptions = {}): Promise<Gated> {
  return gatedForTest({ inFeatures: 4, outFeatures: 2, threads: 1, ...options });
}

async function start(options: ServeOptions, g?: Gated): Promise<{ g: Gated; s: ServeHandle }> {
  const runtime = g ?? (await gated({ admission: { requests: 2 } }));
  const s = await serveForTest(runtime.lr, options);
  return { g: runtime, s };
}

describe('option ranges', () => {
  it.each([
    ['an empty host', { host: '' }],
    // Only undefined takes the default, as for every other option: null listened on 127.0.0.1.
    ['a null host', { host: null as unknown as string }],
    ['a port above 65535', { port: 65_536 }],
    ['a negative port', { port: -1 }],
    ['a zero body limit', { bodyLimit: 0 }],
    ['a body limit of 2^31', { bodyLimit: 2 ** 31 }],
    ['a negative Retry-After', { retryAfterSeconds: -1 }],
    ['a Retry-After over a day', { retryAfterSeconds: 86_401 }],
    ['a negative drain timeout', { drainTimeoutMs: -1 }],
    ['a NaN drain timeout', { drainTimeoutMs: Number.NaN }],
    ['a drain timeout that is not a number', { drainTimeoutMs: '5' as unknown as number }],
    ['a zero request timeout', { requestTimeoutMs: 0 }],
    ['a negative request timeout', { requestTimeoutMs: -1 }],
    ['a NaN request timeout', { requestTimeoutMs: Number.NaN }],
    ['a zero send timeout', { sendTimeoutMs: 0 }],
    ['a NaN send timeout', { sendTimeoutMs: Number.NaN }],
    ['a zero deadline', { deadlineMs: 0 }],
    ['a NaN deadline', { deadlineMs: Number.NaN }],
    // The integer options take whole numbers only: a fraction is no port, byte count or header.
    ['a fractional port', { port: 80.5 }],
    ['a fractional body limit', { bodyLimit: 1024.5 }],
    ['a fractional Retry-After', { retryAfterSeconds: 1.5 }],
    // Misspelt, it would have been left at its default without a word.
    ['a misspelt option', { drainTimeout: 5 }],
    ['a misspelt option set to undefined', { bodylimit: undefined }],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT', async (_name, options) => {
    // Refused before anything listens: one runtime serves every case, and is never closed by it.
    unserved ??= gated({ open: true });
    const g = await unserved;
    expect(await codeOf(serve(g.lr, { port: 0, ...options }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(g.lr.report().state).toBe('ready');
  });

  it.each([null, 5, 'host', true])(
    'options %s, not an object: OMNI_ERR_INVALID_ARGUMENT, and nothing listens',
    async (options) => {
      unserved ??= gated({ open: true });
      const g = await unserved;
      // null was an uncoded TypeError; a primitive read as no options and listened on 8080.
      const outcome = await outcomeOf(serve(g.lr, options as unknown as ServeOptions));
      expect(outcome).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(g.lr.report().state).toBe('ready');
    },
  );

  it.each([0, 'false', null])(
    'closeRuntime %s, not a boolean: OMNI_ERR_INVALID_ARGUMENT, and nothing listens',
    async (closeRuntime) => {
      unserved ??= gated({ open: true });
      const g = await unserved;
      // Anything but false was read as true: the drain would close a runtime the caller kept.
      const options = { port: 0, closeRuntime } as unknown as ServeOptions;
      const outcome = await outcomeOf(serve(g.lr, options));
      expect(outcome).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(g.lr.report().state).toBe('ready');
    },
  );

  it('closeRuntime is read once: the false that was checked keeps the runtime open', async () => {
    // Read three times, this answered false to the check and 0 to the use (0 !== false).
    const g = await gated({ open: true });
    let reads = 0;
    const options = {
      port: 0,
      get closeRuntime() {
        return reads++ < 2 ? false : (0 as unknown as boolean);
      },
    };
    const s = await serve(g.lr, options);
    await s.close();
    expect(g.lr.report().state).toBe('ready');
    expect(reads).toBe(1);
  });

  it.each([
    ['null', null],
    ['an empty object', {}],
    ['a number', 5],
    ['an object with run() alone', { run: async () => new Float32Array(2) }],
    // Each method is checked: one without close() was served, and its drain then failed.
    [
      'a LinearRuntime-shaped object without close()',
      { run: async () => new Float32Array(2), report: () => ({}), inFeatures: 2, outFeatures: 2 },
    ],
    [
      'a LinearRuntime-shaped object whose report is no function',
      {
        run: async () => new Float32Array(2),
        report: {},
        close: async () => ({}),
        inFeatures: 2,
        outFeatures: 2,
      },
    ],
    [
      'a LinearRuntime-shaped object of 1.5 input features',
      {
        run: async () => new Float32Array(2),
        report: () => ({}),
        close: async () => ({}),
        outFeatures: 2,
        inFeatures: 1.5,
      },
    ],
    [
      'a LinearRuntime-shaped object of 0 input features',
      {
        run: async () => new Float32Array(2),
        report: () => ({}),
        close: async () => ({}),
        outFeatures: 2,
        inFeatures: 0,
      },
    ],
    [
      'a LinearRuntime-shaped object of 1.5 output features',
      {
        run: async () => new Float32Array(2),
        report: () => ({}),
        close: async () => ({}),
        inFeatures: 2,
        outFeatures: 1.5,
      },
    ],
  ])('a runtime that is %s: OMNI_ERR_INVALID_ARGUMENT, and nothing listens', async (_what, runtime) => {
    // null was an uncoded TypeError; {} was listened on, and every request then failed with a 500.
    const outcome = await outcomeOf((async () => serve(runtime as unknown as Served, { port: 0 }))());
    expect(outcome).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('a runtime of the widest layer (MAX_FEATURES in and out) is served', async () => {
    const widest = {
      run: async () => new Float32Array(MAX_FEATURES),
      report: () => ({}),
      close: async () => ({}),
      inFeatures: MAX_FEATURES,
      outFeatures: MAX_FEATURES,
    };
    // The bound is inclusive, as the native library's own (OMNI_MAX_FEATURES) is.
    expect(await outcomeOf(serve(widest as unknown as Served, { port: 0 }))).toBe('listening');
  });

  it('a misspelt option is refused before anything listens', async () => {
    unserved ??= gated({ open: true });
    const g = await unserved;
    const { s } = await start({});
    // The port is taken: a listen before the check would have failed with EADDRINUSE.
    const options = { port: s.port, closeRuntim: false } as ServeOptions;
    expect(await codeOf(serve(g.lr, options))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(g.lr.report().state).toBe('ready');
  });

  it('every option is taken', async () => {
    const options = {
      host: '127.0.0.1',
      port: 0,
      bodyLimit: 1024,
      deadlineMs: 60_000,
      retryAfterSeconds: 2,
      drainTimeoutMs: 5_000,
      requestTimeoutMs: 60_000,
      sendTimeoutMs: 60_000,
      closeRuntime: true,
    } satisfies Required<ServeOptions>;
    const { s } = await start(options);
    expect(s.state).toBe('serving');
  });

  it('the largest body limit and Retry-After are accepted', async () => {
    const { s } = await start({ bodyLimit: 2 ** 31 - 1, retryAfterSeconds: 86_400 });
    expect(s.state).toBe('serving');
  });

  // The other ends of the documented ranges (1..2^31 - 1, 0..86,400, 0..65535) are inclusive too.
  it('the smallest body limit and Retry-After, and the highest port, are accepted', async () => {
    const { s } = await start({ bodyLimit: 1, retryAfterSeconds: 0 });
    expect(s.state).toBe('serving');
    // Port 65535 is outside Linux's ephemeral range; should a service hold it, EADDRINUSE still
    // shows the range took it (a port out of range is OMNI_ERR_INVALID_ARGUMENT).
    const highest = await start({ port: 65_535 }).then(
      ({ s: high }) => high.port,
      (err: { code?: string }) => err.code,
    );
    expect([65_535, 'EADDRINUSE']).toContain(highest);
  });

  it('drain({ timeoutMs }) must be a number >= 0, as close({ timeoutMs }) must', async () => {
    const { s } = await start({});
    expect(await codeOf((async () => s.drain({ timeoutMs: -1 }))())).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(await codeOf((async () => s.drain({ timeoutMs: Number.NaN }))())).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    const text = { timeoutMs: '5' } as unknown as DrainOptions;
    expect(await codeOf((async () => s.drain(text))())).toBe('OMNI_ERR_INVALID_ARGUMENT');
    const misspelt = { timeout: 1 } as DrainOptions;
    expect(await codeOf((async () => s.drain(misspelt))())).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(s.state).toBe('serving');
  });

  it('drain() with a malformed option rejects, as its Promise says, rather than throwing', async () => {
    const { s } = await start({});
    // A caller's `s.drain(options).catch(log)` in a signal handler would otherwise throw there.
    for (const options of [{ timeout: 1 }, { timeoutMs: -1 }, null]) {
      let outcome: Promise<unknown> | string = 'threw';
      try {
        outcome = s.drain(options as DrainOptions);
      } catch {}
      expect([options, outcome instanceof Promise ? await codeOf(outcome) : outcome]).toEqual([
        options,
        'OMNI_ERR_INVALID_ARGUMENT',
      ]);
    }
    expect(s.state).toBe('serving');
  });
});

describe('options reach their behaviour', () => {
  it('retryAfterSeconds is the Retry-After of a capacity 503', async () => {
    const g = await gated({ admission: { requests: 1 } });
    const { s } = await start({ retryAfterSeconds: 7 }, g);
    const held = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const refused = await postFloats(s.address, [1, 2, 3, 4]);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('7');
    g.open();
    expect((await held).status).toBe(200);
  });

  it('close() waits as long as drainTimeoutMs says, not less', async () => {
    const { g, s } = await start({ drainTimeoutMs: 600_000 });
    const inflight = postFloats(s.address, [1, 2, 3, 4]);
    await g.reach(ENTERED, 1);
    const closed = s.close();
    // A 1 ms deadline set after the drain's timer: a drain timeout of 1 ms would have fired
    // first (same duration, earlier) and abandoned the request before this call was refused.
    expect(await codeOf(g.lr.run(new Float32Array(4), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    expect(s.state).toBe('draining');
    g.open();
    expect((await inflight).status).toBe(200);
    expect(await closed).toEqual({ clean: true, abandonedRequests: 0 });
  });

  it('close() gives up after drainTimeoutMs, not the default', async () => {
    const { g, s } = await start({ drainTimeoutMs: 1 });
    const stuck = postFloats(s.address, [1, 2, 3, 4]).then(
      (a) => a.status,
      () => 'connection closed',
    );
    await g.reach(ENTERED, 1);
    const closed = s.close();
    // Set after the drain's 1 ms timer: by the time it fires, the drain has given up.
    expect(await codeOf(g.lr.run(new Float32Array(4), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    g.open();
    expect(await closed).toEqual({ clean: false, abandonedRequests: 1 });
    expect([200, 503, 'connection closed']).toContain(await stuck);
  });

  it.each([
    ['drain()', (s: ServeHandle) => s.drain()],
    ['drain({})', (s: ServeHandle) => s.drain({})],
  ])(
    '%s gives up after drainTimeoutMs too ("drain({ timeoutMs }) (as drainTimeoutMs)"), not the default',
    async (_name, end) => {
      const { g, s } = await start({ drainTimeoutMs: 1 });
      const stuck = postFloats(s.address, [1, 2, 3, 4]).then(
        (a) => a.status,
        () => 'connection closed',
      );
      await g.reach(ENTERED, 1);
      const drained = end(s);
      // Set after the drain's 1 ms timer: by the time it fires, the drain has given up.
      expect(await codeOf(g.lr.run(new Float32Array(4), { deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
      g.open();
      expect(await drained).toEqual({ clean: false, abandonedRequests: 1 });
      expect([200, 503, 'connection closed']).toContain(await stuck);
    },
  );

  it.each([
    ['drain({ timeoutMs: 0 })', {}, (s: ServeHandle) => s.drain({ timeoutMs: 0 })],
    ['drainTimeoutMs: 0, close()', { drainTimeoutMs: 0 }, (s: ServeHandle) => s.close()],
  ])(
    '%s abandons the work in flight at once, as close({ timeoutMs: 0 }) does',
    async (_name, options, end) => {
      const { g, s } = await start(options);
      const stuck = postFloats(s.address, [1, 2, 3, 4]).then(
        (a) => a.status,
        () => 'connection closed',
      );
      await g.reach(ENTERED, 1);
      // The gate stays shut: only abandoning the call can end this drain.
      expect(await end(s)).toEqual({ clean: false, abandonedRequests: 1 });
      expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
      expect([503, 'connection closed']).toContain(await stuck);
    },
  );

  it('an idle server drained with timeoutMs 0 is clean', async () => {
    const { g, s } = await start({});
    expect(await s.drain({ timeoutMs: 0 })).toEqual({ clean: true, abandonedRequests: 0 });
    expect(g.lr.report()).toMatchObject({ state: 'stopped', depth: 0 });
  });

  it('closeRuntime: false leaves the runtime running after the drain', async () => {
    const g = await gated({ open: true, admission: { requests: 2 } });
    const s = await serve(g.lr, { port: 0, closeRuntime: false });
    expect(await s.close()).toEqual({ clean: true, abandonedRequests: 0 });
    expect(g.lr.report().state).toBe('ready');
    expect(await g.lr.run(new Float32Array([1, 2, 3, 4]))).toHaveLength(2);
    await g.lr.close();
  });

  it.skipIf(!hasIpv6Loopback)('an IPv6 listener shows its address in brackets', async () => {
    const { s } = await start({ host: '::1' });
    expect(s.host).toBe('::1');
    expect(s.address).toBe(`http://[::1]:${s.port}`);
    expect((await fetch(`${s.address}/health`)).status).toBe(200);
  });
});
