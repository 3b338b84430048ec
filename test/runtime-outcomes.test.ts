/**
 * report() outcomes: every call is counted once, by how it ended, on the paths where a waiter is
 * granted or refused late (after a fatal failure, or by close()); `running` counts only calls a
 * worker has started, not those queued in piscina.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RuntimeReport } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, open, publish, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, rejection, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const LATE_REPLACEMENT_WORKER = builtModuleUrl('test/fixtures/late-replacement-worker.js');

function total(r: RuntimeReport): number {
  return r.completed + r.failed + r.aborted + r.deadline + r.refused + r.invalid + r.unavailable;
}

describe('outcomes of waiters ended late', () => {
  it('a waiter granted its permit after the runtime failed: UNAVAILABLE, counted, permit released', async () => {
    const rt = await start({ threads: 2, admission: { requests: 3, units: 3, wait: true } });
    const a = control();
    const never = control();
    const running = rt.run(gate(a, { value: 'a' }), { cost: 2 });
    await waitFor(a, STARTED, 1, running);
    // The fatal call fits (1 unit); the waiter needs 2 units, which only A's end frees.
    const fatal = rejection(rt.run({ mode: 'fatal', code: 'X_CONTEXT_LOST' }, { cost: 1 }));
    const waiter = rejection(
      rt.run({ mode: 'echo', control: never.buffer as SharedArrayBuffer }, { cost: 2 }),
    );
    expect(await fatal).toMatchObject({ code: 'X_CONTEXT_LOST' });
    expect(rt.state).toBe('failed');
    open(a);
    await expect(running).resolves.toBe('a');
    expect(await waiter).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'failed' });
    expect(Atomics.load(never, INVOKED)).toBe(0);
    const r = rt.report();
    expect(r).toMatchObject({ state: 'failed', depth: 0, units: 0, completed: 1, failed: 1, unavailable: 1 });
    expect(total(r)).toBe(3);
  });

  it('a waiter woken by close() counts as unavailable; outcomes add up', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const a = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    const waiting = rt.run({ mode: 'echo' });
    const closing = rt.close();
    expect(await codeOf(waiting)).toBe('OMNI_ERR_UNAVAILABLE');
    open(a);
    await expect(running).resolves.toBe('a');
    await closing;
    const r = rt.report();
    expect(r).toMatchObject({ completed: 1, unavailable: 1 });
    expect(total(r)).toBe(2);
  });

  // A call whose options getter closes the runtime finds the admission closed: without `wait`
  // its refusal ('closed', answered OMNI_ERR_UNAVAILABLE) was counted `refused`, with `wait`
  // `unavailable`; the same call, told the same, counts the same.
  it('a call whose options close the runtime as they are read counts as unavailable, either way', async () => {
    for (const wait of [false, true]) {
      const rt = await start({ threads: 1, admission: { requests: 1, wait } });
      let closing: Promise<unknown> | undefined;
      const options = {
        get cost() {
          closing = rt.close();
          return 1;
        },
      };
      expect(await codeOf(rt.run({ mode: 'echo' }, options))).toBe('OMNI_ERR_UNAVAILABLE');
      await closing;
      const r = rt.report();
      expect(r).toMatchObject({ refused: 0, unavailable: 1 });
      expect(total(r)).toBe(1);
    }
  });
});

describe('running and queued', () => {
  it('running counts only calls a worker has started, not queued ones; both return to 0', async () => {
    const rt = await start({ threads: 1, admission: { requests: 3 } });
    const a = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    const queued = [rt.run({ mode: 'echo', value: 1 }), rt.run({ mode: 'echo', value: 2 })];
    expect(rt.report()).toMatchObject({ depth: 3, queued: 2, running: 1 });
    open(a);
    await Promise.all([running, ...queued]);
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0, running: 0 });
  });

  it("calls waiting for a lost thread's replacement, still in its init, count as queued", async () => {
    // The fixture's third init (the replacement) waits for words[3]; words[0] counts inits.
    const words = new Int32Array(new SharedArrayBuffer(16));
    const rt = await start({
      worker: LATE_REPLACEMENT_WORKER,
      threads: 2,
      admission: { requests: 4 },
      workerData: { words: words.buffer },
    });
    const a = control();
    const first = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, first);
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await until(() => Atomics.load(words, 0) === 3, 'the replacement to wait in its init');
    const b = control();
    const c = control();
    const queued = [rt.run(gate(b, { value: 'b' })), rt.run(gate(c, { value: 'c' }))];
    // Only A runs. (piscina's queueSize leaves out as many queued calls as threads are starting.)
    expect(rt.report()).toMatchObject({ depth: 3, queued: 2, running: 1 });
    open(a);
    await expect(first).resolves.toBe('a');
    // One of B and C runs on the freed thread; piscina has handed the other to the replacement,
    // which is not up yet.
    await Promise.race([waitFor(b, STARTED, 1, queued[0]), waitFor(c, STARTED, 1, queued[1])]);
    expect(rt.report()).toMatchObject({ depth: 2, queued: 1, running: 1 });
    publish(words, 3, 1); // the replacement's init finishes
    open(b);
    open(c);
    await expect(Promise.all(queued)).resolves.toEqual(['b', 'c']);
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0, running: 0 });
  });
});
