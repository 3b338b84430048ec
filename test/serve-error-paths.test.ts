/**
 * The error paths serve-table.test.ts leaves out: every "body could not be read" error of the
 * HTTP stack is a 400 (never a 413 or 500), a server-side stack error stays a 500, a refusal
 * without a reason is still retryable, and the 'clientError' handler (408, resets, responses
 * already started) driven with a stand-in socket, since node:http's request timeout is minutes.
 */
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { OmniError } from '../src/index.js';
import {
  clientErrorHandler,
  connectHandler,
  type RawAnswers,
  rememberResponse,
} from '../src/serve/client-error.js';
import { answerFor, ServeMetrics, statusFor } from '../src/serve/index.js';
import { closeLingering, lingerOnClose } from '../src/serve/linger.js';
import { fromHttpStack } from '../src/serve/status.js';
import { cancelledWriteError } from './fixtures/serve-harness.js';

describe('fromHttpStack', () => {
  const coded = (code: string): Error => Object.assign(new Error(code), { code });

  it.each([
    'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
    'FST_ERR_CTP_EMPTY_JSON_BODY',
    'FST_ERR_CTP_INVALID_JSON_BODY',
    'ECONNRESET',
    'ECONNABORTED',
    'ERR_STREAM_PREMATURE_CLOSE',
  ])('%s (no statusCode): 400 OMNI_ERR_BAD_BODY', (code) => {
    const answer = answerFor(fromHttpStack(coded(code), 1024));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ code: 'OMNI_ERR_BAD_BODY', detail: code });
  });

  it('an uncoded SyntaxError or "aborted" error (a body cut short): 400 OMNI_ERR_BAD_BODY', () => {
    for (const error of [new SyntaxError('Unexpected end of JSON input'), new Error('aborted')]) {
      const answer = answerFor(fromHttpStack(error, 1024));
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('OMNI_ERR_BAD_BODY');
    }
  });

  it('a stack error with a 5xx statusCode is not turned into a client error', () => {
    const error = Object.assign(new Error('boom'), { statusCode: 500 });
    expect(answerFor(fromHttpStack(error, 1024))).toMatchObject({
      status: 500,
      body: { code: 'OMNI_ERR_INTERNAL' },
    });
  });
});

describe('answerFor', () => {
  it('a refusal without a reason (or with one the table lacks) is a retryable 503', () => {
    expect(answerFor(new OmniError('OMNI_ERR_REJECTED', 'full'))).toMatchObject({ status: 503, retry: true });
    const odd = Object.assign(new OmniError('OMNI_ERR_REJECTED', 'full'), { reason: 'elsewhere' });
    expect(answerFor(odd)).toMatchObject({ status: 503, retry: true, label: 'elsewhere' });
    expect(statusFor('OMNI_ERR_REJECTED')).toBe(503);
  });
});

/**
 * What node does as a response's answer is all out: 'finish', and writableFinished from then
 * (node 24.20+ and 26.7+ say it no sooner, nodejs/node#64847; before, it could read true a tick
 * earlier).
 */
function finish(res: EventEmitter & { writableFinished: boolean }): void {
  res.writableFinished = true;
  res.emit('finish');
}

/** A stand-in for the socket node:http hands a 'clientError' listener. */
function fakeSocket(httpMessage?: { headersSent: boolean }) {
  const socket = Object.assign(new EventEmitter(), {
    destroyed: false,
    writable: true,
    writableFinished: false,
    writableEnded: false,
    /** The server's half of a staged close (linger.ts) was sent. */
    ended: false,
    written: '',
    destroyedWith: undefined as unknown,
    _httpMessage: httpMessage,
    /** Handed to the kernel at once: its callback comes after write() returned, as node's does. */
    write(text: string, callback?: (err?: Error | null) => void) {
      socket.written += text;
      if (callback) queueMicrotask(() => callback(null));
      return true;
    },
    end() {
      socket.ended = true;
      socket.writableEnded = true;
      socket.writable = false;
      socket.writableFinished = true;
    },
    resume() {},
    destroy(err?: unknown) {
      socket.destroyed = true;
      socket.destroyedWith = err;
    },
  });
  return socket;
}

/**
 * `socket`'s writes fail (the client reset the connection under them): node calls a failed write
 * back with its error before it destroys the socket (writable.js onwriteError), so the error
 * alone says the answer is not out.
 */
function failWrites(socket: ReturnType<typeof fakeSocket>): void {
  socket.write = (text, callback) => {
    socket.written += text;
    const err = Object.assign(new Error('write EPIPE'), { code: 'EPIPE' });
    if (callback) queueMicrotask(() => callback(err));
    return true;
  };
}

/**
 * `socket`'s writes stay in this process (a client that takes nothing) until it is destroyed,
 * which calls them back as node calls back a write the kernel had not taken once its
 * connection is destroyed: with no error before node 22.9, ECANCELED since (cancelledWriteError()).
 */
function holdWrites(socket: ReturnType<typeof fakeSocket>): void {
  const held: ((err?: Error | null) => void)[] = [];
  const destroy = socket.destroy;
  socket.write = (text, callback) => {
    socket.written += text;
    if (callback) held.push(callback);
    return true;
  };
  socket.destroy = (err) => {
    destroy(err);
    for (const callback of held.splice(0)) callback(cancelledWriteError());
  };
}

/**
 * A stand-in for the drain's RawAnswers, keeping what it was told in order ('owe', 'discharge',
 * 'settle'), and the stand-in for the response settled.
 */
function ledger(): RawAnswers & { told: string[]; settled: unknown[] } {
  const told: string[] = [];
  const settled: unknown[] = [];
  return {
    told,
    settled,
    owe: () => void told.push('owe'),
    discharge: () => void told.push('discharge'),
    settle: (res) => {
      told.push('settle');
      settled.push(res);
    },
  };
}

function metrics(): ServeMetrics {
  return new ServeMetrics({
    report: () => {
      throw new Error('not scraped for runtime figures here');
    },
    inflight: () => 0,
  });
}

/** The counter once the write callbacks pending now have run (it counts answers once out). */
async function clientErrors(m: ServeMetrics): Promise<string> {
  await new Promise((resolve) => setImmediate(resolve));
  const metric = await m.registry.getSingleMetricAsString('omni_http_client_errors_total');
  return metric
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
}

function parse(written: string): { status: number; head: string; body: Record<string, unknown> } {
  const split = written.indexOf('\r\n\r\n');
  const head = written.slice(0, split);
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1]),
    head,
    body: JSON.parse(written.slice(split + 4)) as Record<string, unknown>,
  };
}

describe('clientErrorHandler', () => {
  const error = (code: string): Error & { code: string } =>
    Object.assign(new Error(`parser says ${code}`), { code });

  it.each([
    ['ERR_HTTP_REQUEST_TIMEOUT', 408, 'OMNI_ERR_REQUEST_TIMEOUT'],
    ['HPE_HEADER_OVERFLOW', 431, 'OMNI_ERR_HEADERS_TOO_LARGE'],
    ['HPE_INVALID_CONTENT_LENGTH', 400, 'OMNI_ERR_BAD_BODY'],
    // No request in its parser: the FIN cut a head short (a body cut short: serve-status.test.ts).
    ['HPE_INVALID_EOF_STATE', 400, 'OMNI_ERR_BAD_REQUEST'],
    ['HPE_INVALID_METHOD', 400, 'OMNI_ERR_BAD_REQUEST'],
  ])(
    '%s: one JSON %i answer with Connection: close, counted, then the socket closes in stages',
    async (code, status, ours) => {
      const m = metrics();
      const socket = fakeSocket();
      const err = error(code);
      const answers = ledger();
      clientErrorHandler(m, answers)(err, socket as unknown as Socket);
      const answer = parse(socket.written);
      expect(answer.status).toBe(status);
      expect(answer.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
      expect(answer.head).toMatch(/\r\ncontent-type: application\/json/i);
      expect(answer.head).toContain(`\r\nContent-Length: ${Buffer.byteLength(JSON.stringify(answer.body))}`);
      expect(answer.body).toMatchObject({ code: ours, detail: code });
      // Ended, not destroyed: bytes the client sent after the bad ones are read and dropped
      // until it closes too (destroyed over them, the socket would reset under the answer).
      expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: false });
      expect(await clientErrors(m)).toContain(`omni_http_client_errors_total{detail="${code}"} 1`);
      // In flight (for the drain) from the error until the answer was out.
      expect(answers.told).toEqual(['owe', 'discharge']);
    },
  );

  it('a routed request whose body failed: its response settled once the 400 is out, not owed', async () => {
    const m = metrics();
    const routed = { headersSent: false };
    const socket = fakeSocket(routed);
    const answers = ledger();
    clientErrorHandler(m, answers)(error('HPE_INVALID_CHUNK_SIZE'), socket as unknown as Socket);
    expect(parse(socket.written).status).toBe(400);
    // Its response is in flight already; it is out of flight once the answer is out.
    expect(answers.told).toEqual([]);
    expect(await clientErrors(m)).toContain(
      'omni_http_client_errors_total{detail="HPE_INVALID_CHUNK_SIZE"} 1',
    );
    expect(answers.told).toEqual(['settle']);
    expect(answers.settled).toEqual([routed]);
  });

  it('an answer whose write fails: not counted, still owed (until its connection closes)', async () => {
    const m = metrics();
    const socket = fakeSocket();
    failWrites(socket);
    const answers = ledger();
    clientErrorHandler(m, answers)(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
    expect(parse(socket.written).status).toBe(400);
    expect(await clientErrors(m)).not.toContain('detail=');
    expect(answers.told).toEqual(['owe']);
  });

  /** Runs `body` with setTimeout faked: the send timeout's and the linger's timers. */
  function onFakeClock(body: () => void): void {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      body();
    } finally {
      vi.useRealTimers();
    }
  }

  it('an error answered at once: its answer, never out, is bounded by sendTimeoutMs', () => {
    onFakeClock(() => {
      const socket = fakeSocket();
      clientErrorHandler(metrics(), ledger(), 50)(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
      expect(parse(socket.written).status).toBe(400);
      // Never out (no 'finish': a client that takes none of it), and well before the linger's end.
      vi.advanceTimersByTime(50);
      expect(socket.destroyed).toBe(true);
    });
  });

  it('an answer out (the connection said finish) is not cut by sendTimeoutMs while it lingers', () => {
    onFakeClock(() => {
      const socket = fakeSocket();
      clientErrorHandler(metrics(), ledger(), 50)(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
      socket.emit('finish');
      vi.advanceTimersByTime(50);
      // Before: cut all the same, over what the client may still send (a reset, not a close).
      expect(socket.destroyed).toBe(false);
    });
  });

  it('a connection that closed before its answer was out leaves no timer armed', () => {
    onFakeClock(() => {
      const socket = fakeSocket();
      clientErrorHandler(
        metrics(),
        ledger(),
        600_000,
      )(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
      socket.emit('close');
      // Before: the send timeout's stayed armed, holding the connection and the process that long.
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  it('a reset connection: nothing written, nothing counted', async () => {
    const m = metrics();
    const socket = fakeSocket();
    clientErrorHandler(m, ledger())(error('ECONNRESET'), socket as unknown as Socket);
    expect(socket.written).toBe('');
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  /** A response node routed on `socket` and has not finished: what a pipelined error waits for. */
  function pendingResponse(socket: ReturnType<typeof fakeSocket>) {
    const res = Object.assign(new EventEmitter(), { writableFinished: false, destroyed: false });
    rememberResponse({ socket } as unknown as IncomingMessage, res as unknown as ServerResponse);
    return res;
  }

  it('an error behind an answer still to come: answered and counted once that answer ends', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    const res = pendingResponse(socket);
    const answers = ledger();
    const handler = clientErrorHandler(m, answers);
    handler(error('HPE_HEADER_OVERFLOW'), socket as unknown as Socket);
    // The parser stays failed and says so again on the next read: one answer, one count.
    handler(error('HPE_HEADER_OVERFLOW'), socket as unknown as Socket);
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: false,
    });
    // Not answered yet, so not counted yet: the answer before it may still close the connection.
    expect(await clientErrors(m)).not.toContain('detail=');
    finish(res);
    res.emit('close');
    expect(parse(socket.written).status).toBe(431);
    expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: false });
    expect(await clientErrors(m)).toContain('omni_http_client_errors_total{detail="HPE_HEADER_OVERFLOW"} 1');
    // Owed (in flight) while it waited, until its answer was out, not until the lingering
    // connection closes.
    expect(answers.told).toEqual(['owe', 'discharge']);
  });

  it('an error behind an answer still to come, its answer held then cut off: not counted, still owed', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    holdWrites(socket);
    const res = pendingResponse(socket);
    const answers = ledger();
    clientErrorHandler(m, answers)(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
    finish(res);
    res.emit('close');
    expect(parse(socket.written).status).toBe(400);
    // The drain or the send timeout closing the connection over it.
    socket.destroy();
    expect(await clientErrors(m)).not.toContain('detail=');
    // Discharged by its connection's close (the drain's own listener), not as an answer out.
    expect(answers.told).toEqual(['owe']);
  });

  it('an error behind an answer still to come: its answer, once written, is bounded by sendTimeoutMs', () => {
    const SEND_TIMEOUT_MS = 50;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const socket = fakeSocket({ headersSent: false });
      const res = pendingResponse(socket);
      clientErrorHandler(
        metrics(),
        ledger(),
        SEND_TIMEOUT_MS,
      )(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
      finish(res);
      res.emit('close');
      expect(parse(socket.written).status).toBe(400);
      // Never out (the fake socket never says 'finish': a client that takes none of it). Before:
      // only the answers written at once were bounded; this one held its connection for good.
      vi.advanceTimersByTime(SEND_TIMEOUT_MS);
      expect(socket.destroyed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an error behind an answer that never finished (the client left): closed, nothing written, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    const res = pendingResponse(socket);
    clientErrorHandler(m, ledger())(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
    res.emit('close');
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: true,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  // Before: counted when the parser failed, though never answered (a CONNECT in its place was
  // neither answered nor counted).
  it('an error behind an answer that closes the connection (a drain): not answered, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    const res = pendingResponse(socket);
    clientErrorHandler(m, ledger())(error('HPE_INVALID_METHOD'), socket as unknown as Socket);
    // node ends the connection after an answer that says Connection: close.
    finish(res);
    socket.end();
    res.emit('close');
    expect(socket.written).toBe('');
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  // Before: the FIN waited for that answer, then drew a 400 and a count; the call before it ran on
  // for nobody (node aborts the calls running at a FIN between requests, not at one inside one).
  it("the client's FIN inside a request behind an answer still to come: it left, closed at once, not counted", async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    pendingResponse(socket);
    clientErrorHandler(m, ledger())(error('HPE_INVALID_EOF_STATE'), socket as unknown as Socket);
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: true,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  it('bytes after a closing request whose answer is still to come: left to node, nothing counted', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    const res = pendingResponse(socket);
    clientErrorHandler(m, ledger())(error('HPE_CLOSED_CONNECTION'), socket as unknown as Socket);
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: false,
    });
    // That answer goes out and node closes the connection after it, in stages (linger.ts):
    // destroyed now, over the bytes still unread, it would reset under the answer.
    finish(res);
    socket.end();
    res.emit('close');
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: false,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  // node ends the connection once the answer that closes it is out; bytes the parser reads before
  // the linger takes the socket over (linger.ts) fail it again.
  it('bytes after a closing answer already out, its connection lingering: left alone, nothing counted', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: false });
    const res = pendingResponse(socket);
    finish(res);
    socket.end();
    res.emit('close');
    clientErrorHandler(m, ledger())(error('HPE_CLOSED_CONNECTION'), socket as unknown as Socket);
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: false,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  it('a request whose response already started: no second answer on the wire, still closed, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket({ headersSent: true });
    clientErrorHandler(m, ledger())(error('HPE_INVALID_CHUNK_SIZE'), socket as unknown as Socket);
    expect(socket.written).toBe('');
    expect(socket.destroyed).toBe(true);
    expect(await clientErrors(m)).not.toContain('detail=');
  });
});

describe('connectHandler', () => {
  const req = {} as IncomingMessage;
  const noAdopt = (): void => {};

  /** A response routed on `socket`, not finished; `closes`: it says Connection: close. */
  function pendingResponse(socket: ReturnType<typeof fakeSocket>, closes = false) {
    const res = Object.assign(new EventEmitter(), {
      writableFinished: false,
      destroyed: false,
      _last: closes,
    });
    rememberResponse({ socket } as unknown as IncomingMessage, res as unknown as ServerResponse);
    return res;
  }

  it('alone: one JSON 501 answer with Connection: close, counted, then the socket closes in stages', async () => {
    const m = metrics();
    const socket = fakeSocket();
    const adopted: Socket[] = [];
    const answers = ledger();
    connectHandler(m, (s) => adopted.push(s), answers)(req, socket as unknown as Socket);
    // Handed to the drain, which closes it with the other connections (node no longer does).
    expect(adopted).toEqual([socket]);
    const answer = parse(socket.written);
    expect(answer.status).toBe(501);
    expect(answer.head).toMatch(/\r\nconnection: close(\r\n|$)/i);
    expect(answer.body).toMatchObject({ code: 'OMNI_ERR_NOT_IMPLEMENTED' });
    // Ended, not destroyed: what the client sends after it is read and dropped (linger.ts).
    expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: false });
    expect(await clientErrors(m)).toContain('omni_http_client_errors_total{detail="CONNECT"} 1');
    expect(answers.told).toEqual(['owe', 'discharge']);
  });

  it('its answer whose write fails: not counted, still owed (until its connection closes)', async () => {
    const m = metrics();
    const socket = fakeSocket();
    failWrites(socket);
    const answers = ledger();
    connectHandler(m, noAdopt, answers)(req, socket as unknown as Socket);
    expect(parse(socket.written).status).toBe(501);
    expect(await clientErrors(m)).not.toContain('detail=');
    expect(answers.told).toEqual(['owe']);
  });

  // node no longer looks after a connection it handed to 'connect' listeners: one left open
  // here would stay open.
  it('a connection no longer writable: nothing written, destroyed, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket();
    socket.writable = false;
    connectHandler(m, noAdopt, ledger())(req, socket as unknown as Socket);
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: true,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  it('behind an answer that never finished (the client left): destroyed, nothing written, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket();
    const res = pendingResponse(socket);
    connectHandler(m, noAdopt, ledger())(req, socket as unknown as Socket);
    res.emit('close');
    expect({ written: socket.written, destroyed: socket.destroyed }).toEqual({
      written: '',
      destroyed: true,
    });
    expect(await clientErrors(m)).not.toContain('detail=');
  });

  it('behind an answer out already that closed the connection: not answered, not counted, not owed', async () => {
    const m = metrics();
    const socket = fakeSocket();
    const res = pendingResponse(socket, true);
    finish(res);
    const answers = ledger();
    connectHandler(m, noAdopt, answers)(req, socket as unknown as Socket);
    expect(socket.written).toBe('');
    expect(await clientErrors(m)).not.toContain('detail=');
    // Never to be answered: not in flight while node closes the connection.
    expect(answers.told).toEqual([]);
  });

  it('behind an answer still to come that turns out to close the connection: not answered, not counted', async () => {
    const m = metrics();
    const socket = fakeSocket();
    const res = pendingResponse(socket, true);
    const answers = ledger();
    connectHandler(m, noAdopt, answers)(req, socket as unknown as Socket);
    expect(answers.told).toEqual(['owe']);
    finish(res);
    res.emit('close');
    expect(socket.written).toBe('');
    expect(await clientErrors(m)).not.toContain('detail=');
    // Never to be answered: no longer owed, though its connection is still open.
    expect(answers.told).toEqual(['owe', 'discharge']);
  });
});

describe('closeLingering', () => {
  /** A socket whose server half is open; `clientEnded`: the client's FIN was read already. */
  function lingering(clientEnded: boolean) {
    const socket = Object.assign(fakeSocket(), { readableEnded: clientEnded });
    closeLingering(socket as unknown as Socket);
    return socket;
  }

  it('a client that closed its side first: destroyed once the answer is out, no linger', () => {
    const socket = lingering(true);
    expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: true });
  });

  it("otherwise the server's FIN goes out, and the socket is destroyed when the client's comes", () => {
    const socket = lingering(false);
    expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: false });
    socket.emit('end');
    expect(socket.destroyed).toBe(true);
  });

  it("what the client still sends is read and dropped: node's parser no longer sees it", () => {
    const socket = Object.assign(fakeSocket(), { readableEnded: false, resumed: false });
    socket.resume = () => {
      socket.resumed = true;
    };
    // node's parser feeds on the socket's 'data': a request after the close would be parsed.
    const parsed: unknown[] = [];
    socket.on('data', (chunk: unknown) => parsed.push(chunk));
    closeLingering(socket as unknown as Socket);
    socket.emit('data', Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n\r\n'));
    // Read on (a paused socket would never hear the client's FIN, holding it the full 2 s).
    expect({ parsed, resumed: socket.resumed }).toEqual({ parsed: [], resumed: true });
  });

  it("node's own close after a final answer (its destroySoon) lingers too", () => {
    const socket = Object.assign(fakeSocket(), { readableEnded: false, destroySoon: () => {} });
    lingerOnClose(socket as unknown as Socket);
    socket.destroySoon();
    expect({ ended: socket.ended, destroyed: socket.destroyed }).toEqual({ ended: true, destroyed: false });
    socket.emit('end');
    expect(socket.destroyed).toBe(true);
  });

  it('"for at most 2 s (RFC 9112 9.6)" (docs/limits.md): a client that never closes is dropped 2 s after the FIN', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const socket = lingering(false);
      vi.advanceTimersByTime(1_999);
      expect(socket.destroyed).toBe(false);
      vi.advanceTimersByTime(1);
      expect(socket.destroyed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
