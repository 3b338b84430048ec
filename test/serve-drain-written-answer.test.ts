/**
 * The drain's cut (its step 5: every connection closed) against an answer already written whole:
 * node hands a small answer to the kernel at once, but says 'finish' for it only on a later tick.
 * A cut that comes between those two has not cut that answer off: the client gets all of it, so
 * it is recorded with its own status, not as 444.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, expect, it } from 'vitest';
import type { Served } from '../src/serve/index.js';
import { CUT_OFF_STATUS } from '../src/serve/metrics.js';
import { sample } from './fixtures/metrics-text.js';
import { FINISHED_ONLY_AT_FINISH } from './fixtures/node-version.js';
import { closeServed, gatedForTest, listeningClient, serveForTest } from './fixtures/serve-harness.js';

/** Lets a drain the test left waiting end (closeServed() waits for it). */
let releaseClose: (() => void) | undefined;

afterEach(async () => {
  releaseClose?.();
  await closeServed();
});

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/metrics",method="GET",status="${status}"}`;

it('an answer written whole just before the cut, its finish after it: recorded with its status', async () => {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: 2, open: true });
  // The drain's runtime close ends when the test says: right after the answer's last write.
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  releaseClose = release;
  let runtimeClosed!: () => void;
  const closing = new Promise<void>((resolve) => {
    runtimeClosed = resolve;
  });
  const served: Served = Object.assign(Object.create(g.lr) as Served, {
    close: async (options?: { timeoutMs?: number }) => {
      const closed = await g.lr.close(options);
      runtimeClosed();
      await released;
      return closed;
    },
  });
  const s = await serveForTest(served);
  const { socket: c, heard: heardSoFar } = listeningClient(s.port);
  const closed = new Promise<void>((resolve) => c.once('close', () => resolve()));
  await new Promise<void>((resolve) => c.once('connect', () => resolve()));
  // A connection open before the drain: its request comes while the runtime closes.
  const routed = new Promise<ServerResponse>((resolve) =>
    s.app.server.once('request', (_req, res: ServerResponse) => resolve(res)),
  );
  const drained = s.drain({ timeoutMs: 600_000 });
  await closing;
  c.write('GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n');
  const res = await routed;
  // 'prefinish': the answer's last byte has been handed to the connection, and node's 'finish'
  // is still to come; the drain goes on to its cut in the same turn.
  let finished = false;
  res.once('finish', () => {
    finished = true;
  });
  let atPrefinish: { writtenWhole: boolean; finished: boolean; writableFinished: boolean } | undefined;
  res.once('prefinish', () => {
    atPrefinish = {
      writtenWhole: res.writableEnded && res.writableLength === 0,
      finished,
      writableFinished: res.writableFinished,
    };
    release();
  });
  expect(await drained).toEqual({ clean: true, abandonedRequests: 0 });
  // writableFinished says so only with 'finish' from node 24.20 and 26.7 (nodejs/node#64847;
  // measured: 24.19, 26.6 and 22.23.5 say so before it).
  expect(atPrefinish).toEqual({
    writtenWhole: true,
    finished: false,
    writableFinished: !FINISHED_ONLY_AT_FINISH,
  });
  await closed;
  const heard = heardSoFar();
  const split = heard.indexOf('\r\n\r\n');
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(heard.slice(0, split))?.[1]);
  expect(heard.slice(0, 12)).toBe('HTTP/1.1 200');
  expect(heard.length - (split + 4)).toBe(length);
  const text = (await s.metrics.scrape()).text;
  // Before: recorded 444, though the client got the whole answer.
  expect([sample(text, series(200)), sample(text, series(CUT_OFF_STATUS))]).toEqual([1, undefined]);
});
