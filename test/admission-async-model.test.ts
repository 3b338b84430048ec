import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AdmissionReport, BoundedAdmission, type Claim, type Permit } from '../src/index.js';
import { settles, track, turn } from './fixtures/admission-interleave.js';

/**
 * Model-based test of waiting admission: random command sequences of tryAdmit, admit (with a
 * signal and a timeout), releases, claims released through either instance, aborts, timeouts
 * and close() run on two instances attached to one buffer (as two threads would hold), and
 * against a sequential model of what the doc comments promise:
 * - each instance has a FIFO of waiters; its head is admitted as soon as it fits;
 * - a release wakes its own instance's heads at once and the other's through the shared wake-up
 *   word (within a bounded number of event-loop turns: a lost wake-up never settles);
 * - tryAdmit refuses 'queued' while any instance has waiters;
 * - `rejected` counts refusals, timeouts, too-large and closed, never aborts;
 * - after close every waiter rejects OMNI_ERR_CLOSED, and close() resolves at depth 0;
 * - an instance holds the process open exactly while it has waiters or an unsettled drain.
 * report() is compared once things have settled, and once more in the moment right after a
 * release (ReleaseThen): there the releasing instance has tried its heads (BoundedAdmission
 * #wake does so within the release) and the other's wake-up is still on its way, the window in
 * which a tryAdmit must not take the room. The moment while the WAITING flag is cleared and
 * re-set lies inside one synchronous call here, where no command can run: it is not modelled.
 *
 * Timeouts run on fake setTimeout (setLongTimeout reads the global at each call), so a chosen
 * waiter's deadline is reached by advancing the fake clock; deadlines are kept distinct so the
 * order in which timers fire is the model's order too. setImmediate stays real: `turn` and the
 * Atomics.waitAsync wake-ups are real event-loop work.
 */

const ABORTED = 'OMNI_ERR_ABORTED';
const TIMEOUT = 'OMNI_ERR_TIMEOUT';
const CLOSED = 'OMNI_ERR_CLOSED';
const TOO_LARGE = 'OMNI_ERR_TOO_LARGE';
type Outcome = 'admitted' | typeof ABORTED | typeof TIMEOUT | typeof CLOSED | typeof TOO_LARGE;

/** Extra turns after the expected settlements, in which nothing else may settle. */
const QUIET_TURNS = 3;
const CONTROLLERS = 2;
const MAX_TIMER_MS = 2 ** 31 - 1;

type Inst = 0 | 1;

interface ModelWaiter {
  readonly id: number;
  readonly inst: Inst;
  readonly cost: number;
  /** Controller slot and its generation (a slot gets a fresh controller after each abort). */
  readonly signal: { slot: number; gen: number } | undefined;
  readonly deadline: number | undefined;
  aborted: boolean;
}

interface Model {
  readonly requests: number;
  readonly ceiling: number | null;
  depth: number;
  units: bigint;
  rejected: number;
  closed: boolean;
  readonly queues: [ModelWaiter[], ModelWaiter[]];
  /** Owner instance and cost of each held permit; `key` finds the real permit. */
  readonly held: Array<{ key: number; inst: Inst; cost: number }>;
  readonly claims: number[];
  readonly generations: number[];
  /** Fake clock. */
  now: number;
  nextId: number;
  /** close() calls per instance: each holds a drain until depth 0. */
  readonly drains: [number, number];
  /**
   * The instance whose wake-up is on its way (a release or close through the other one): its
   * heads try when it next looks at its queue, at the latest when things settle.
   */
  stale: Inst | undefined;
  /** Waiters settled since the last check, in the order the real side must observe them. */
  readonly settled: Array<{ id: number; outcome: Outcome }>;
}

interface Real {
  readonly inst: [BoundedAdmission, BoundedAdmission];
  /** Held permits by the model's key (the waiter's id, or one of its own for tryAdmit). */
  readonly held: Map<number, Permit>;
  readonly claims: Claim[];
  readonly controllers: AbortController[];
  readonly waiters: Map<number, { promise: Promise<Permit>; state: ReturnType<typeof track<Permit>> }>;
  readonly drains: Array<{ promise: Promise<void>; state: ReturnType<typeof track<void>> }>;
}

type Command = fc.AsyncCommand<Model, Real>;

/** A command: its synchronous action, then the settled comparison. */
abstract class Step implements Command {
  /** Whether the step applies to the model's state; most always do. */
  check(_m: Readonly<Model>): boolean {
    return true;
  }
  abstract act(m: Model, r: Real): void;
  async run(m: Model, r: Real): Promise<void> {
    this.act(m, r);
    await settleAndVerify(m, r);
  }
}

function fits(m: Model, cost: number): boolean {
  return m.depth < m.requests && (m.ceiling === null || m.units + BigInt(cost) <= BigInt(m.ceiling));
}

function take(m: Model, inst: Inst, w: ModelWaiter, cost: number): void {
  m.depth += 1;
  if (m.ceiling !== null) m.units += BigInt(cost);
  m.held.push({ key: w.id, inst, cost });
  m.settled.push({ id: w.id, outcome: 'admitted' });
}

function unqueue(m: Model, w: ModelWaiter): boolean {
  const q = m.queues[w.inst];
  const at = q.indexOf(w);
  if (at < 0) return false;
  q.splice(at, 1);
  return true;
}

/** WaitingRoom.onChange: aborted heads leave, fitting heads are admitted, closed rejects all. */
function runHeads(m: Model, inst: Inst): void {
  if (m.stale === inst) m.stale = undefined;
  const q = m.queues[inst];
  for (let head = q[0]; head; head = q[0]) {
    if (head.aborted) {
      q.shift();
      m.settled.push({ id: head.id, outcome: ABORTED });
    } else if (m.closed) {
      q.shift();
      m.rejected += 1;
      m.settled.push({ id: head.id, outcome: CLOSED });
    } else if (fits(m, head.cost)) {
      q.shift();
      take(m, inst, head, head.cost);
    } else {
      break;
    }
  }
}

/** admit() past its argument checks (the signal not aborted). */
function modelAdmit(m: Model, w: ModelWaiter): void {
  if (m.ceiling !== null && w.cost > m.ceiling) {
    m.rejected += 1;
    m.settled.push({ id: w.id, outcome: TOO_LARGE });
  } else if (m.closed) {
    m.rejected += 1;
    m.settled.push({ id: w.id, outcome: CLOSED });
  } else {
    // Queued at its own instance's tail, then that instance's heads try: with its queue empty it
    // is the head and is admitted if it fits (another instance's waiters do not hold it back:
    // FIFO is per instance); heads whose wake-up is still on its way are tried here too.
    m.queues[w.inst].push(w);
    runHeads(m, w.inst);
  }
}

/** What tryAdmit answers: the shared flag shows every instance's waiters. */
function expectedTry(m: Model, cost: number): string {
  if (m.ceiling !== null && cost > m.ceiling) return 'too-large';
  if (m.closed) return 'closed';
  if (waitingCount(m) > 0) return 'queued';
  if (m.depth >= m.requests) return 'requests';
  return fits(m, cost) ? 'ok' : 'units';
}

/** A release through `via`: its own heads try in the release, the other's on its wake-up. */
function giveBack(m: Model, cost: number, via: Inst): void {
  m.depth -= 1;
  if (m.ceiling !== null) m.units -= BigInt(cost);
  runHeads(m, via);
  m.stale = other(via);
}

const other = (inst: Inst): Inst => (inst === 0 ? 1 : 0);
const waitingCount = (m: Model): number => m.queues[0].length + m.queues[1].length;

function outcomeOf(state: { value?: Permit; error?: unknown }): Outcome | string {
  if (state.error !== undefined) return (state.error as { code?: string }).code ?? 'no code';
  return 'admitted';
}

/**
 * Every interval made during the test, to count those that keep the process alive (the waiting
 * room's hold is one; the leak guard's rotation is unref'd). Counted here rather than through
 * process.getActiveResourcesInfo(), where the test runner's own timers come and go.
 */
const intervals = new Set<ReturnType<typeof setInterval>>();
const realSetInterval = globalThis.setInterval;
const realClearInterval = globalThis.clearInterval;
const refdIntervals = (): number => [...intervals].filter((timer) => timer.hasRef()).length;

function expectedReport(m: Model): AdmissionReport {
  return {
    depth: m.depth,
    capacity: m.requests,
    rejected: m.rejected,
    units: Number(m.units),
    unitCapacity: m.ceiling,
    waiting: waitingCount(m),
    leaked: 0,
  };
}

/** Lets the real side settle, then compares it with the model. */
async function settleAndVerify(m: Model, r: Real): Promise<void> {
  if (m.stale !== undefined) runHeads(m, m.stale); // its wake-up arrives
  for (const { id, outcome } of m.settled.splice(0)) {
    const waiter = r.waiters.get(id)!;
    await settles(waiter.promise).catch(() => undefined);
    expect({ id, outcome: outcomeOf(waiter.state) }).toEqual({ id, outcome });
    if (outcome === 'admitted') {
      const permit = waiter.state.value!;
      expect(permit.units).toBe(m.held.find((h) => h.key === id)!.cost);
      r.held.set(id, permit);
    }
    r.waiters.delete(id);
  }
  const draining = m.closed && m.depth === 0;
  if (draining) for (const drain of r.drains) await settles(drain.promise);
  for (let i = 0; i < QUIET_TURNS; i++) await turn();
  // Nobody the model keeps waiting has settled, and no drain before depth 0.
  for (const [id, waiter] of r.waiters)
    expect({ id, settled: waiter.state.settled }).toEqual({ id, settled: false });
  for (const drain of r.drains) expect(drain.state.settled).toBe(draining);
  expect(r.held.size).toBe(m.held.length);
  expect(r.claims.length).toBe(m.claims.length);
  const expected = expectedReport(m);
  expect(r.inst[0].report()).toEqual(expected);
  expect(r.inst[1].report()).toEqual(expected);
  expect(r.inst[0].closed).toBe(m.closed);
  expect(r.inst[1].closed).toBe(m.closed);
  // An instance holds the process open (one ref'd timer) exactly while it has waiters or an
  // unsettled drain; a handle left behind would keep a finished program alive.
  const holding = (i: Inst): number => (m.queues[i].length > 0 || (m.drains[i] > 0 && m.depth > 0) ? 1 : 0);
  expect(refdIntervals()).toBe(holding(0) + holding(1));
}

type CostSpec = { kind: 'small'; n: number } | { kind: 'ceiling'; minus: number } | { kind: 'over' };

function costFor(spec: CostSpec, ceiling: number | null): number {
  if (spec.kind === 'small') return spec.n;
  if (ceiling === null) return spec.kind === 'over' ? 7 : 1;
  return spec.kind === 'over' ? ceiling + 1 : Math.max(0, ceiling - spec.minus);
}

const costSpec: fc.Arbitrary<CostSpec> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('small' as const), n: fc.nat(4) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('ceiling' as const), minus: fc.nat(2) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('over' as const) }) },
);
const inst = fc.constantFrom<Inst>(0, 1);
const pick = fc.nat(1000);

function realTry(m: Model, r: Real, inst: Inst, cost: number): void {
  const expected = expectedTry(m, cost);
  const result = r.inst[inst].tryAdmit(cost);
  expect(result.ok ? 'ok' : result.reason).toBe(expected);
  if (result.ok) {
    const key = m.nextId++;
    r.held.set(key, result);
    m.depth += 1;
    if (m.ceiling !== null) m.units += BigInt(cost);
    m.held.push({ key, inst, cost });
  } else {
    m.rejected += 1;
  }
}

class TryAdmit extends Step {
  constructor(
    readonly inst: Inst,
    readonly spec: CostSpec,
  ) {
    super();
  }
  act(m: Model, r: Real): void {
    const cost = costFor(this.spec, m.ceiling);
    realTry(m, r, this.inst, cost);
  }
  toString(): string {
    return `tryAdmit@${this.inst}(${JSON.stringify(this.spec)})`;
  }
}

type SignalSpec = { kind: 'none' } | { kind: 'live'; slot: number } | { kind: 'aborted' };
type TimeoutSpec = { kind: 'none' } | { kind: 'ms'; ms: number } | { kind: 'long'; extra: number };

class Admit extends Step {
  constructor(
    readonly inst: Inst,
    readonly spec: CostSpec,
    readonly signal: SignalSpec,
    readonly timeout: TimeoutSpec,
  ) {
    super();
  }
  act(m: Model, r: Real): void {
    const cost = costFor(this.spec, m.ceiling);
    let timeoutMs: number | undefined;
    if (this.timeout.kind !== 'none') {
      // Distinct deadlines among the queued: the fake clock then fires them in the model's order.
      let ms = this.timeout.kind === 'ms' ? this.timeout.ms : MAX_TIMER_MS + this.timeout.extra;
      const taken = new Set([...m.queues[0], ...m.queues[1]].map((w) => w.deadline));
      while (taken.has(m.now + ms)) ms += 1;
      timeoutMs = ms;
    }
    let signal: AbortSignal | undefined;
    let signalSlot: ModelWaiter['signal'];
    if (this.signal.kind === 'aborted') signal = AbortSignal.abort();
    else if (this.signal.kind === 'live') {
      signal = r.controllers[this.signal.slot]!.signal;
      signalSlot = { slot: this.signal.slot, gen: m.generations[this.signal.slot]! };
    }
    const w: ModelWaiter = {
      id: m.nextId++,
      inst: this.inst,
      cost,
      signal: signalSlot,
      deadline: timeoutMs === undefined ? undefined : m.now + timeoutMs,
      aborted: false,
    };
    const promise = r.inst[this.inst].admit(cost, { signal, timeoutMs });
    r.waiters.set(w.id, { promise, state: track(promise) });
    if (this.signal.kind === 'aborted') m.settled.push({ id: w.id, outcome: ABORTED });
    else modelAdmit(m, w);
  }
  toString(): string {
    return `admit@${this.inst}(${JSON.stringify(this.spec)}, ${JSON.stringify(this.signal)}, ${JSON.stringify(this.timeout)})`;
  }
}

/**
 * Removes the `pick`-th held permit (modulo) from both sides. A permit granted to a waiter in the
 * current step is not in the caller's hands yet (its promise settles in a microtask): skipped.
 */
function takeHeld(m: Model, r: Real, pick: number): { held: Model['held'][number]; permit: Permit } {
  const inHand = m.held.filter((h) => r.held.has(h.key));
  const held = inHand[pick % inHand.length]!;
  m.held.splice(m.held.indexOf(held), 1);
  const permit = r.held.get(held.key)!;
  r.held.delete(held.key);
  return { held, permit };
}

class Release extends Step {
  constructor(
    readonly pick: number,
    readonly dispose: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.held.length > 0;
  }
  act(m: Model, r: Real): void {
    if (m.held.every((h) => !r.held.has(h.key))) return;
    const { held, permit } = takeHeld(m, r, this.pick);
    if (this.dispose) permit[Symbol.dispose]();
    else permit.release();
    giveBack(m, held.cost, held.inst);
  }
  toString(): string {
    return `${this.dispose ? 'dispose' : 'release'}(#${this.pick})`;
  }
}

/**
 * A release, then at once another step, before the other instance's wake-up has run: tryAdmit
 * must not take the room its waiters are being woken for; anything that makes that instance
 * look at its queue (an admit, an abort, a timeout, a release or close through it) lets its
 * heads try there and then.
 */
class ReleaseThen extends Step {
  constructor(
    readonly pick: number,
    readonly next: Step,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.held.length > 0;
  }
  act(m: Model, r: Real): void {
    const { held, permit } = takeHeld(m, r, this.pick);
    permit.release();
    giveBack(m, held.cost, held.inst);
    if (this.next.check(m)) this.next.act(m, r);
    // Still inside the window: the other instance's waiters are counted, nothing else moved.
    expect(r.inst[other(held.inst)].report()).toEqual(expectedReport(m));
  }
  toString(): string {
    return `release(#${this.pick}) then ${this.next}`;
  }
}

class ToClaim extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.held.length > 0;
  }
  act(m: Model, r: Real): void {
    const { held, permit } = takeHeld(m, r, this.pick);
    r.claims.push(structuredClone(permit.toClaim()));
    m.claims.push(held.cost);
  }
  toString(): string {
    return `toClaim(#${this.pick})`;
  }
}

class ReleaseClaim extends Step {
  constructor(
    readonly pick: number,
    readonly via: Inst,
    readonly reclaim: boolean,
  ) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return m.claims.length > 0;
  }
  act(m: Model, r: Real): void {
    const at = this.pick % m.claims.length;
    const [cost] = m.claims.splice(at, 1);
    const [claim] = r.claims.splice(at, 1);
    if (this.reclaim) expect(r.inst[this.via].reclaim(claim!)).toBe(true);
    else r.inst[this.via].releaseClaim(claim!);
    giveBack(m, cost!, this.via);
  }
  toString(): string {
    return `${this.reclaim ? 'reclaim' : 'releaseClaim'}@${this.via}(claim #${this.pick})`;
  }
}

/** Aborts the signal of the `pick`-th queued waiter that has one (others may share it). */
class Abort extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return [...m.queues[0], ...m.queues[1]].some((w) => w.signal !== undefined);
  }
  act(m: Model, r: Real): void {
    const followed = [...m.queues[0], ...m.queues[1]].filter((w) => w.signal !== undefined);
    const { slot, gen } = followed[this.pick % followed.length]!.signal!;
    const mine = (w: ModelWaiter): boolean => w.signal?.slot === slot && w.signal.gen === gen;
    // Every follower sees the signal aborted at once; they hear it in the order they came, and
    // each one's leaving lets its instance's heads try (aborted heads leave as they come up).
    const following = [...m.queues[0], ...m.queues[1]].filter(mine).sort((a, b) => a.id - b.id);
    for (const w of following) w.aborted = true;
    r.controllers[slot]!.abort();
    for (const w of following) {
      if (!unqueue(m, w)) continue;
      m.settled.push({ id: w.id, outcome: ABORTED });
      runHeads(m, w.inst);
    }
    r.controllers[slot] = new AbortController();
    m.generations[slot] = gen + 1;
  }
  toString(): string {
    return `abort(#${this.pick})`;
  }
}

class FireTimeout extends Step {
  constructor(readonly pick: number) {
    super();
  }
  check(m: Readonly<Model>): boolean {
    return [...m.queues[0], ...m.queues[1]].some((w) => w.deadline !== undefined);
  }
  act(m: Model): void {
    const timed = [...m.queues[0], ...m.queues[1]].filter((w) => w.deadline !== undefined);
    const target = timed[this.pick % timed.length]!.deadline!;
    const due = timed.filter((w) => w.deadline! <= target).sort((a, b) => a.deadline! - b.deadline!);
    vi.advanceTimersByTime(target - m.now);
    m.now = target;
    for (const w of due) {
      if (!unqueue(m, w)) continue; // admitted when an earlier one left: its timer is gone
      m.rejected += 1;
      m.settled.push({ id: w.id, outcome: TIMEOUT });
      runHeads(m, w.inst);
    }
  }
  toString(): string {
    return `fireTimeout(#${this.pick})`;
  }
}

class Close extends Step {
  constructor(readonly inst: Inst) {
    super();
  }
  act(m: Model, r: Real): void {
    const promise = r.inst[this.inst].close();
    r.drains.push({ promise, state: track(promise) });
    m.closed = true;
    m.drains[this.inst] += 1;
    runHeads(m, this.inst);
    m.stale = other(this.inst);
  }
  toString(): string {
    return `close@${this.inst}()`;
  }
}

const signalSpec: fc.Arbitrary<SignalSpec> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('live' as const), slot: fc.nat(CONTROLLERS - 1) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'aborted' as const }) },
);
const timeoutSpec: fc.Arbitrary<TimeoutSpec> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ms' as const), ms: fc.nat(20) }) },
  // Beyond one setTimeout: setLongTimeout re-arms in steps.
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('long' as const), extra: fc.integer({ min: 1, max: 3 }) }),
  },
);

// What may run in the moment after a release, before the other instance's wake-up.
const inWindow: fc.Arbitrary<Step> = fc.oneof(
  fc.tuple(inst, costSpec).map(([i, s]) => new TryAdmit(i, s)),
  fc.tuple(inst, costSpec, signalSpec, timeoutSpec).map(([i, c, s, t]) => new Admit(i, c, s, t)),
  fc.tuple(pick, fc.boolean()).map(([p, d]) => new Release(p, d)),
  fc.tuple(pick, inst, fc.boolean()).map(([p, via, re]) => new ReleaseClaim(p, via, re)),
  pick.map((p) => new Abort(p)),
  pick.map((p) => new FireTimeout(p)),
  inst.map((i) => new Close(i)),
);

// One weighted choice: a close ends the interesting part of a run, so it comes rarely.
const command: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(inst, costSpec).map(([i, s]) => new TryAdmit(i, s)) },
  {
    weight: 20,
    arbitrary: fc.tuple(inst, costSpec, signalSpec, timeoutSpec).map(([i, c, s, t]) => new Admit(i, c, s, t)),
  },
  { weight: 5, arbitrary: fc.tuple(pick, fc.boolean()).map(([p, d]) => new Release(p, d)) },
  {
    weight: 6,
    arbitrary: fc.tuple(pick, inWindow).map(([p, next]) => new ReleaseThen(p, next)),
  },
  { weight: 3, arbitrary: pick.map((p) => new ToClaim(p)) },
  {
    weight: 4,
    arbitrary: fc.tuple(pick, inst, fc.boolean()).map(([p, via, re]) => new ReleaseClaim(p, via, re)),
  },
  { weight: 6, arbitrary: pick.map((p) => new Abort(p)) },
  { weight: 6, arbitrary: pick.map((p) => new FireTimeout(p)) },
  { weight: 1, arbitrary: inst.map((i) => new Close(i)) },
);
const commands = fc.commands([command], { maxCommands: 40, size: 'max' });

async function runModel(bounds: { requests: number; units?: number | undefined }, cmds: Iterable<Command>) {
  intervals.clear(); // a failed run's holds are not this run's
  const a = new BoundedAdmission(bounds);
  const real: Real = {
    inst: [a, BoundedAdmission.attach(a.buffer)],
    held: new Map(),
    claims: [],
    controllers: Array.from({ length: CONTROLLERS }, () => new AbortController()),
    waiters: new Map(),
    drains: [],
  };
  const model: Model = {
    requests: bounds.requests,
    ceiling: bounds.units ?? null,
    depth: 0,
    units: 0n,
    rejected: 0,
    closed: false,
    queues: [[], []],
    held: [],
    claims: [],
    generations: Array.from({ length: CONTROLLERS }, () => 0),
    now: 0,
    nextId: 0,
    drains: [0, 0],
    settled: [],
    stale: undefined,
  };
  await fc.asyncModelRun(() => ({ model, real }), cmds);
  // Ends the run as a user would: close, then give everything back; the last step must settle
  // every waiter (closed) and every drain, leaving no handle behind.
  await new Close(1).run(model, real);
  while (model.held.length > 0) await new Release(0, false).run(model, real);
  while (model.claims.length > 0) await new ReleaseClaim(0, 0, false).run(model, real);
  expect(real.waiters.size).toBe(0);
  expect(real.drains.every((d) => d.state.settled)).toBe(true);
}

describe('admit() waiting across two attached instances, against a sequential model', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    globalThis.setInterval = ((...args: Parameters<typeof setInterval>) => {
      const timer = realSetInterval(...args);
      intervals.add(timer);
      return timer;
    }) as typeof setInterval;
    globalThis.clearInterval = ((timer: Parameters<typeof clearInterval>[0]) => {
      intervals.delete(timer as ReturnType<typeof setInterval>);
      realClearInterval(timer);
    }) as typeof clearInterval;
  });
  afterEach(() => {
    vi.useRealTimers();
    globalThis.setInterval = realSetInterval;
    globalThis.clearInterval = realClearInterval;
    intervals.clear();
  });

  it('with a unit ceiling (narrow and wide state words)', async () => {
    const bounds = fc.oneof(
      fc.record({ requests: fc.integer({ min: 1, max: 3 }), units: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ requests: fc.integer({ min: 1, max: 3 }), units: fc.constant(2 ** 40) }),
    );
    await fc.assert(
      fc.asyncProperty(bounds, commands, (b, cmds) => runModel(b, cmds)),
      { numRuns: 800, seed: 0x5eed },
    );
  });

  it('in request-only mode', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 2 }), commands, (requests, cmds) =>
        runModel({ requests }, cmds),
      ),
      { numRuns: 600, seed: 0x5eed },
    );
  });
});
