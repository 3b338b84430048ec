/**
 * What omni_http_refused_total counts: requests the server refused without running them (413,
 * 503), by reason, when it refused them, as the runtime counts its own refusals. A call the
 * drain abandoned while it ran is no refusal, though it is answered 503 too; a refusal whose
 * client left before its answer is still one (the latency histogram says it went unanswered).
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerExitedError } from '../src/errors.js';
import type { Served } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import { clients, closeServed, gatedForTest, serveForTest, startServed } from './fixtures/serve-harness.js';

afterEach(closeServed);

const refused = (reason: string, status: number): string =>
  `omni_http_refused_total{reason="${reason}",status="${status}"}`;
const posts = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

describe('omni_http_refused_total', () => {
  it('a call the drain abandoned while it ran: answered 503, recorded so, but not counted as refused', async () => {
    const g = await gatedForTest({ inFeatures: 2, outFeatures: 2, open: true });
    const lr = g.lr;
    let entered!: () => void;
    const reached = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let fail!: (error: Error) => void;
    let heard!: Promise<unknown>;
    // Its close terminates the call's thread, as the runtime's close(0) does to work still
    // running, and ends once the client heard that call's answer: the drain closes the
    // connections only after the runtime closed, so the 503 is out by then.
    const runtime: Served = {
      run: (() => {
        entered();
        return new Promise((_resolve, reject) => {
          fail = reject;
        });
      }) as unknown as Served['run'],
      report: lr.report.bind(lr),
      close: (async (options?: { timeoutMs?: number }) => {
        fail(new WorkerExitedError('worker terminated'));
        await heard;
        await lr.close(options);
        return { clean: false, abandoned: 1 };
      }) as Served['close'],
      inFeatures: 2,
      outFeatures: 2,
    };
    const s = await serveForTest(runtime);
    const answer = postFloats(s.address, [1, 2]);
    heard = answer;
    await reached;
    expect(await s.drain({ timeoutMs: 0 })).toEqual({ clean: false, abandonedRequests: 1 });
    const a = await answer;
    expect({ status: a.status, code: a.json?.code }).toEqual({ status: 503, code: 'OMNI_ERR_UNAVAILABLE' });
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, posts(503))).toBe(1);
    // Before: 1, as if the request had been refused on arrival (reason "unavailable").
    expect(sample(text, refused('unavailable', 503))).toBeUndefined();
  });

  it('a refusal whose client left before its answer: still counted, as the runtime counts it; recorded 499', async () => {
    const { g, s } = await startServed({ inFeatures: 2, outFeatures: 2, admission: { requests: 1 } });
    const body = Buffer.from(new Float32Array([1, 2]).buffer);
    const post = Buffer.concat([
      Buffer.from(
        'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
          `Content-Length: ${body.length}\r\n\r\n`,
      ),
      body,
    ]);
    const client = connect({ host: '127.0.0.1', port: s.port });
    clients.push(client);
    client.on('error', () => {});
    await new Promise((resolve) => client.once('connect', resolve));
    // The second is refused (the first holds the bound) while its answer waits behind the first's.
    client.write(Buffer.concat([post, post]));
    await g.reach(ENTERED, 1);
    await until(() => g.lr.report().rejected === 1, 'the second refused');
    client.destroy();
    await until(() => g.lr.report().aborted === 1, 'the first aborted');
    g.open();
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'none in flight',
    );
    const text = (await s.metrics.scrape()).text;
    expect(sample(text, refused('requests', 503))).toBe(1);
    expect(sample(text, 'omni_runtime_rejected_total')).toBe(1);
    expect([sample(text, posts(499)), sample(text, posts(503))]).toEqual([2, undefined]);
  });
});
