/**
 * An answer written after its client left, of which not a byte reached the connection, is a 499
 * (docs/http.md: "`499` when its client left first"; a half-closing client's requests "end as 499,
 * unanswered"). node sets headersSent for such an answer all the same: it buffers the answer of a
 * response whose connection is no longer writable (the client's FIN ended it, and its end waits
 * for earlier bytes to go out) and drops one written to a destroyed connection. Read as "began
 * to leave", headersSent recorded it with the status it never sent.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { answerLeft } from '../src/serve/answer-left.js';
import { sample } from './fixtures/metrics-text.js';
import { until } from './fixtures/runtime-harness.js';
import { HELD_INPUT } from './fixtures/serve-gate-layout.js';
import { clients, closeServed, gatedForTest, serveForTest } from './fixtures/serve-harness.js';

afterEach(closeServed);

/** What node writes for a 100 Continue. */
const CONTINUE_BYTES = 'HTTP/1.1 100 Continue\r\n\r\n'.length;

const IN = 4;
/** Wide rows, so that one call's answer (32 MiB) is more than the kernel's buffers hold. */
const OUT = 1024;
const BIG_ROWS = 8192;

function request(rows: Float32Array): Buffer {
  const body = Buffer.from(rows.buffer);
  const head =
    'POST /v1/linear HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n' +
    `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

const series = (status: number): string =>
  `omni_http_request_duration_seconds_count{route="/v1/linear",method="POST",status="${status}"}`;

describe('an answer none of which left', () => {
  it('queued behind a large answer when its client half-closed: 499, not the 200 it never sent', async () => {
    const g = await gatedForTest({
      inFeatures: IN,
      outFeatures: OUT,
      threads: 2,
      open: true, // the gate; the held call waits at HOLD until g.open()
      admission: { requests: 4 },
    });
    const s = await serveForTest(g.lr);
    const responses: ServerResponse[] = [];
    let connection: Socket | undefined;
    s.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      responses.push(res);
      connection = req.socket;
    });
    const socket = connect({ host: '127.0.0.1', port: s.port });
    clients.push(socket);
    socket.on('error', () => {});
    // Not read yet: the large answer backs up on the server's side of the connection.
    socket.pause();
    const heard: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => heard.push(chunk));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const held = new Float32Array(IN);
    held[0] = HELD_INPUT;
    socket.write(Buffer.concat([request(new Float32Array(BIG_ROWS * IN)), request(held)]));
    await until(
      () => responses[0]?.headersSent === true && g.entered() === 2,
      'the large answer written, the second call held',
    );
    socket.end();
    // node ends its side when it hears the FIN; the end waits for the large answer to go out.
    await until(() => connection?.writable === false, 'the server to hear the FIN');
    g.open();
    await until(() => responses[1]?.headersSent === true, 'the second answer to be written');
    // The premise: the large answer still backs up, so nothing after it could be sent.
    expect(connection?.writableLength).toBeGreaterThan(0);
    socket.resume();
    await closed;
    await until(
      async () => sample((await s.metrics.scrape()).text, 'omni_http_inflight') === 0,
      'both responses to close',
    );
    // The client heard the large answer alone.
    expect(Buffer.concat(heard).toString('latin1').split('HTTP/1.1 ').length - 1).toBe(1);
    const text = (await s.metrics.scrape()).text;
    expect({ ok: sample(text, series(200)), gone: sample(text, series(499)) }).toEqual({ ok: 1, gone: 1 });
    expect(g.lr.report().depth).toBe(0);
  });
});

describe('answerLeft', () => {
  /** A response and its connection, as far as answerLeft reads them. */
  function watched(attached: boolean, wroteContinue: boolean) {
    const connection = { bytesWritten: 1_000 };
    const res = Object.assign(new EventEmitter(), {
      socket: attached ? connection : null,
      headersSent: false,
    });
    const left = answerLeft(
      res as unknown as ServerResponse,
      connection as unknown as Socket,
      () => wroteContinue,
    );
    return { connection, res, left };
  }

  it('a head handed over after a 100 Continue: left', () => {
    const { connection, res, left } = watched(true, true);
    connection.bytesWritten += CONTINUE_BYTES + 100;
    res.headersSent = true;
    expect(left()).toBe(true);
  });

  it('the 100 Continue alone handed over, its head kept or dropped: not left', () => {
    const { connection, res, left } = watched(true, true);
    connection.bytesWritten += CONTINUE_BYTES;
    res.headersSent = true;
    expect(left()).toBe(false);
  });

  it('no 100 Continue: any byte handed over after its turn came is its own', () => {
    const { connection, res, left } = watched(false, false);
    connection.bytesWritten += 500; // an earlier answer's, before this one's turn
    res.emit('socket', connection);
    res.headersSent = true;
    expect(left()).toBe(false);
    connection.bytesWritten += 1;
    expect(left()).toBe(true);
  });

  // The client-error handler writes a routed request's 400 on its connection in its place: those
  // bytes are not this response's, whose status (a 200 never set) they would otherwise record.
  it('its head never written: not left, whatever its connection sent', () => {
    const { connection, left } = watched(true, false);
    connection.bytesWritten += 500;
    expect(left()).toBe(false);
  });

  it('its turn never came: not left, whatever its connection sent', () => {
    const { connection, res, left } = watched(false, false);
    res.headersSent = true;
    connection.bytesWritten += 500;
    expect(left()).toBe(false);
  });
});
