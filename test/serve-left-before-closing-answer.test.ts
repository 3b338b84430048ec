/**
 * A request pipelined behind an answer that closes its connection (a JSON answer streamed to
 * HTTP/1.0 has no length) is a 444 only when that answer was out before the client left: the
 * server cut it off then (serve-behind-closing-answer.test.ts). A client that left first, its
 * reset while the closing answer was still in this process or its FIN (taken as gone, docs/limits.md:
 * a half-closing client), left that request unanswered: a 499. node says 'finish' for the
 * closing answer all the same (its write called back once its connection is destroyed, before
 * node 24.20 and 26.7; or handed over once the client reads after its FIN), and read as "out", it
 * made the request behind it a 444.
 */
import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServeHandle } from '../src/serve/index.js';
import { sample } from './fixtures/metrics-text.js';
import { FINISHED_ONLY_AT_FINISH } from './fixtures/node-version.js';
import { until } from './fixtures/runtime-harness.js';
import { ENTERED } from './fixtures/serve-gate-layout.js';
import {
  closeServed,
  gatedForTest,
  healthBehindStreamedJson,
  holdNextConnection,
  listeningClient,
  serveForTest,
} from './fixtures/serve-harness.js';

afterEach(closeServed);

const OUT = 2;

/**
 * Starts a streamed JSON answer to HTTP/1.0 with /health pipelined behind it (answered into
 * node's buffer while the call is held), then hands the answer's writes on until all of it was
 * written and only its last write is still held.
 */
async function closingAnswerHeld() {
  const g = await gatedForTest({ inFeatures: 4, outFeatures: OUT, threads: 1, admission: { requests: 2 } });
  const s = await serveForTest(g.lr);
  const responses: ServerResponse[] = [];
  s.app.server.on('request', (_req, res: ServerResponse) => responses.push(res));
  const hold = holdNextConnection(s);
  const client = listeningClient(s.port);
  const { connection, held, step, release } = await hold;
  client.socket.write(healthBehindStreamedJson(OUT));
  await g.reach(ENTERED, 1);
  await until(() => responses[1]?.headersSent === true, 'the /health answer to be written');
  g.open();
  // Each write handed on as it comes, until the answer is ended: its last one stays held.
  await until(() => {
    if (responses[0]?.writableEnded === true && held()) return true;
    if (held()) step();
    return false;
  }, 'the streamed answer to be ended, its last write held');
  return { s, client, connection, responses, release };
}

async function healthStatuses(s: ServeHandle) {
  await until(
    async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
    'both responses to close',
  );
  const text = (await s.metrics.scrape()).text;
  const health = (status: number): number | undefined =>
    sample(text, `omni_http_request_duration_seconds_count{route="/health",method="GET",status="${status}"}`);
  return { cut: health(444), gone: health(499) };
}

describe('a request behind a closing answer whose client left before that answer was out', () => {
  it('the client resets the connection: 499, not 444', async () => {
    const { s, client, responses } = await closingAnswerHeld();
    let finished = false;
    responses[0]?.once('finish', () => (finished = true));
    const closed = new Promise<void>((resolve) => client.socket.once('close', () => resolve()));
    client.socket.resetAndDestroy();
    await closed;
    const statuses = await healthStatuses(s);
    // The premise: node before 24.20 and 26.7 said 'finish' for the closing answer, none of whose
    // last write left; 24.20+ and 26.7+ say none for an answer whose write failed
    // (nodejs/node#64847).
    expect(finished).toBe(!FINISHED_ONLY_AT_FINISH);
    expect(statuses).toEqual({ cut: undefined, gone: 1 });
  });

  it('the client half-closes (its FIN), then reads the answer: 499, not 444', async () => {
    const { s, client, connection, release } = await closingAnswerHeld();
    const closed = new Promise<void>((resolve) => client.socket.once('close', () => resolve()));
    client.socket.end();
    await until(() => connection.writable === false, 'the server to hear the FIN');
    release();
    await closed;
    // The client read the closing answer to its end, and nothing after it.
    expect(client.heard().split('HTTP/1.1 ').length - 1).toBe(1);
    expect(client.heard().endsWith(']]}')).toBe(true);
    expect(await healthStatuses(s)).toEqual({ cut: undefined, gone: 1 });
  });
});
