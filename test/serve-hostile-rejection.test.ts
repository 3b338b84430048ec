/**
 * A call to a `Served` that rejects with a value nobody can read safely (a Proxy whose traps
 * throw, an Error whose code or message getter throws, an object String() cannot convert) is a
 * failed call like any other: answered 500 with this server's coded JSON body and recorded so.
 * And a call's rejection is the call's failure, never taken for one of the HTTP stack's own
 * (a statusCode of 4xx, a SyntaxError): the client's request did nothing wrong.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Served, ServeHandle } from '../src/serve/index.js';
import { answerFor } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { postFloats } from './fixtures/serve-client.js';
import { closeServed, gatedForTest, serveForTest } from './fixtures/serve-harness.js';

afterAll(closeServed);

const fail = (what: string) => (): never => {
  throw new Error(what);
};

/** A Proxy every one of whose traps throws. */
const throwingProxy = (): unknown =>
  new Proxy(
    {},
    {
      get: fail('get'),
      getPrototypeOf: fail('getPrototypeOf'),
      has: fail('has'),
      ownKeys: fail('ownKeys'),
      getOwnPropertyDescriptor: fail('getOwnPropertyDescriptor'),
    },
  );

const withThrowing = (key: string): Error => {
  const error = new Error('the call failed');
  Object.defineProperty(error, key, { get: fail(key) });
  return error;
};

const HOSTILE: [string, () => unknown][] = [
  ['a Proxy whose every trap throws', throwingProxy],
  ['an Error whose code getter throws', () => withThrowing('code')],
  ['an Error whose message getter throws', () => withThrowing('message')],
  ['an object whose toString throws', () => ({ toString: fail('toString') })],
  ['an object without a prototype', () => Object.create(null)],
];

/** Rejections that look like the HTTP stack's own errors, from the call instead. */
const STACK_LOOKALIKE: [string, () => unknown][] = [
  ['an Error with statusCode 404', () => Object.assign(new Error('not there'), { statusCode: 404 })],
  ['a SyntaxError', () => new SyntaxError('Unexpected token')],
  ['an Error whose message is "aborted"', () => new Error('aborted')],
  // The stack's own codes, which the error handler rewrites (413, 415, 400) when the stack throws.
  [
    'an Error coded FST_ERR_CTP_BODY_TOO_LARGE',
    () => Object.assign(new Error('big'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' }),
  ],
  ['an Error coded ECONNRESET', () => Object.assign(new Error('reset'), { code: 'ECONNRESET' })],
];

interface Wrapped {
  readonly s: ServeHandle;
  /** run() rejects with what `make` gives. */
  reject(make: () => unknown): void;
  /** run() resolves what `make` gives. */
  resolve(make: () => unknown): void;
}

let served: Promise<Wrapped> | undefined;

/** One server over a wrapper whose run() settles with what the test last set. */
function server(): Promise<Wrapped> {
  served ??= (async () => {
    const g = await gatedForTest({ inFeatures: 2, outFeatures: 2, open: true });
    let make: () => unknown = () => new Error('unset');
    let resolves = false;
    const lr = g.lr;
    const runtime: Served = {
      run: (() => (resolves ? Promise.resolve(make()) : Promise.reject(make()))) as unknown as Served['run'],
      report: lr.report.bind(lr),
      close: lr.close.bind(lr),
      inFeatures: 2,
      outFeatures: 2,
    };
    const s = await serveForTest(runtime);
    return {
      s,
      reject: (next) => {
        resolves = false;
        make = next;
      },
      resolve: (next) => {
        resolves = true;
        make = next;
      },
    };
  })();
  return served;
}

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

async function count(s: ServeHandle, status: number): Promise<number> {
  return sample((await s.metrics.scrape()).text, series(status)) ?? 0;
}

describe('a call that rejects with a value that cannot be read', () => {
  it.each(HOSTILE)('%s: 500 OMNI_ERR_INTERNAL in JSON, recorded as a 500', async (_name, make) => {
    const { s, reject } = await server();
    reject(make);
    const before = await count(s, 500);
    const answer = await postFloats(s.address, [1, 2]);
    // Before: fastify's own body ({"statusCode":500,"error":"Internal Server Error","message":
    // what the trap threw}): the server's error handler threw as it read the value.
    expect(answer.status).toBe(500);
    expect(answer.json?.code).toBe('OMNI_ERR_INTERNAL');
    expect(typeof answer.json?.message).toBe('string');
    expect(await count(s, 500)).toBe(before + 1);
  });

  it.each(HOSTILE)('%s: answerFor() answers it, never throws', (_name, make) => {
    const answer = answerFor(make());
    expect({ status: answer.status, code: answer.body.code }).toEqual({
      status: 500,
      code: 'OMNI_ERR_INTERNAL',
    });
    expect(typeof answer.body.message).toBe('string');
  });
});

describe("a call's rejection that looks like an HTTP stack error", () => {
  it.each(STACK_LOOKALIKE)('%s: 500 OMNI_ERR_INTERNAL, not a 400', async (_name, make) => {
    const { s, reject } = await server();
    reject(make);
    const before = await count(s, 500);
    const answer = await postFloats(s.address, [1, 2]);
    // Before: 400 (OMNI_ERR_BAD_REQUEST for the statusCode, OMNI_ERR_BAD_BODY for the others),
    // blaming the client's request for the call's own failure.
    expect({ status: answer.status, code: answer.json?.code }).toEqual({
      status: 500,
      code: 'OMNI_ERR_INTERNAL',
    });
    expect(await count(s, 500)).toBe(before + 1);
  });
});

describe('a call that resolves a value that cannot be read', () => {
  it('a Proxy whose prototype cannot be asked: 500 OMNI_ERR_TASK_FAILED, as any other result that is no rows', async () => {
    const { s, resolve } = await server();
    resolve(() => 'not rows');
    const plain = await postFloats(s.address, [1, 2]);
    expect({ status: plain.status, code: plain.json?.code }).toEqual({
      status: 500,
      code: 'OMNI_ERR_TASK_FAILED',
    });
    // Its `then` reads undefined: awaited, a value whose every read throws is a rejection.
    resolve(() => new Proxy({}, { getPrototypeOf: fail('getPrototypeOf') }));
    const answer = await postFloats(s.address, [1, 2]);
    // Before: 500 OMNI_ERR_INTERNAL with the trap's message: the route's check of the result
    // (instanceof Float32Array) threw it.
    expect({ status: answer.status, code: answer.json?.code }).toEqual({
      status: 500,
      code: 'OMNI_ERR_TASK_FAILED',
    });
  });
});
