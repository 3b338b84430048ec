/**
 * Claims of the README and docs/admission.md about BoundedAdmission that no other test pins, one
 * `it` each, the page's words in its name.
 */
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import * as api from '../src/index.js';
import { type AdmitOptions, BoundedAdmission, type Claim } from '../src/index.js';
import * as serveApi from '../src/serve/index.js';
import { attachedWorker, controlAfter } from './fixtures/attached-worker.js';

// Queues one admit() on the attached instance (the bound is full), then says so in control word 0.
const WAITING_WORKER = `
const { workerData } = require('node:worker_threads');
(async () => {
  const { BoundedAdmission } = await import(workerData.url);
  const control = new Int32Array(workerData.control);
  const admission = BoundedAdmission.attach(workerData.buffer);
  admission.admit(1).catch(() => {});
  Atomics.store(control, 0, 1);
  Atomics.notify(control, 0);
})();
`;

describe('README and docs/admission.md: BoundedAdmission', () => {
  it('"admit(cost = 1, ...)": admit() without a cost reserves one request and one unit', async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 5 });
    const permit = await admission.admit();
    expect(permit.units).toBe(1);
    expect(admission.report()).toMatchObject({ depth: 1, units: 1 });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });

  it('"tryAdmit(cost = 1)": tryAdmit() without a cost reserves one request and one unit', () => {
    const admission = new BoundedAdmission({ requests: 2, units: 5 });
    const permit = admission.tryAdmit();
    if (!permit.ok) throw new Error(`refused: ${permit.reason}`);
    expect(permit.units).toBe(1);
    expect(admission.report()).toMatchObject({ depth: 1, units: 1 });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });

  it('"At most 65,536 claims are outstanding per admission (OMNI_ERR_CLAIMS_EXHAUSTED)"', () => {
    const admission = new BoundedAdmission({ requests: 65_537 });
    const claims: Claim[] = [];
    for (let i = 0; i < 65_536; i++) {
      const permit = admission.tryAdmit();
      if (!permit.ok) throw new Error(`refused: ${permit.reason}`);
      claims.push(permit.toClaim());
    }
    const last = admission.tryAdmit();
    if (!last.ok) throw new Error(`refused: ${last.reason}`);
    expect(() => last.toClaim()).toThrow(expect.objectContaining({ code: 'OMNI_ERR_CLAIMS_EXHAUSTED' }));
    last.release();
    for (const claim of claims) admission.releaseClaim(claim);
    expect(admission.report().depth).toBe(0);
  });

  it('"admit()\'s options are not checked for unknown keys": a misspelt timeout is ignored', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const held = admission.tryAdmit();
    if (!held.ok) throw new Error('the empty admission refused');
    // `timeout` for `timeoutMs`: no timeout at all, so the call waits rather than timing out at once
    // (timeoutMs: 0) or being refused for its key (OMNI_ERR_INVALID_ARGUMENT).
    const waiting = admission.admit(1, { timeout: 0 } as AdmitOptions);
    expect(admission.report()).toMatchObject({ waiting: 1, rejected: 0 });
    held.release();
    const permit = await waiting;
    expect(permit.ok).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
    await admission.close();
  });

  it('"the same holds for good if a thread is terminated while its admit calls wait (their count stays in the shared word)"', async () => {
    const owner = new BoundedAdmission({ requests: 1 });
    const held = owner.tryAdmit();
    if (!held.ok) throw new Error('the empty admission refused');
    const control = new Int32Array(new SharedArrayBuffer(8));
    const worker = attachedWorker(WAITING_WORKER, owner.buffer, control);
    expect(await controlAfter(control, 0)).toBe(1);
    const exited = once(worker, 'exit');
    await worker.terminate();
    await exited;
    expect(owner.report()).toMatchObject({ depth: 1, waiting: 1 });
    held.release();
    // Room, but the ended thread's waiter is still counted: tryAdmit keeps refusing 'queued'.
    for (let i = 0; i < 3; i++) expect(owner.tryAdmit()).toEqual({ ok: false, reason: 'queued' });
    expect(owner.report()).toMatchObject({ depth: 0, waiting: 1 });
  });

  it('"The package exports no way to make a Permit": neither entry exports its class or a class it extends', () => {
    const permit = new BoundedAdmission({ requests: 1 }).tryAdmit();
    if (!permit.ok) throw new Error('the empty admission refused');
    const classes = new Set<unknown>();
    for (let proto = Object.getPrototypeOf(permit); proto !== null; proto = Object.getPrototypeOf(proto)) {
      if (proto.constructor !== Object) classes.add(proto.constructor);
    }
    expect(classes.size).toBeGreaterThan(0);
    const exported = [...Object.entries(api), ...Object.entries(serveApi)];
    expect(exported.filter(([, value]) => classes.has(value)).map(([name]) => name)).toEqual([]);
    permit.release();
  });
});
