/**
 * A large JSON answer, encoded as the client takes it. JSON costs ~20 bytes per output float,
 * and built whole (arrays, then one string, then node's copy) a call of 65,536 rows of 256
 * floats, asked for by a 640 KB request, was a 338 MiB answer that took the server from 86 MiB
 * to 1.8 GiB and held the main thread, which answers every connection, for seconds at a time.
 * Streamed, a chunk of rows is encoded only once the connection took the one before (the
 * stream's own backpressure): memory holds a chunk or two beside the call's floats, and other
 * connections are served between chunks. The text is the same as the whole answer's.
 *
 * Small answers stay whole, with their Content-Length: most answers, and every one an HTTP/1.0
 * client can take on a kept-alive connection (a streamed answer is chunked, or closes the
 * connection for HTTP/1.0).
 */
import { Readable } from 'node:stream';
import { setImmediate } from 'node:timers/promises';

/** Floats per chunk (about 1.3 MB of JSON): answers up to this size are sent whole. */
export const JSON_CHUNK_FLOATS = 65_536;

/** Whether an answer of rows x outFeatures floats is streamed rather than built whole. */
export function streamsJson(rows: number, outFeatures: number): boolean {
  return rows * outFeatures > JSON_CHUNK_FLOATS;
}

/** `{"rows":[[...],...]}`, a chunk of whole rows at a time; a non-finite output is `null`. */
export function* jsonChunks(y: Float32Array, rows: number, outFeatures: number): Generator<string> {
  const perChunk = Math.max(1, Math.floor(JSON_CHUNK_FLOATS / outFeatures));
  for (let first = 0; first < rows; first += perChunk) {
    const last = Math.min(rows, first + perChunk);
    const chunk: number[][] = new Array(last - first);
    for (let r = first; r < last; r++) {
      chunk[r - first] = Array.from(y.subarray(r * outFeatures, (r + 1) * outFeatures));
    }
    // JSON.stringify's own number text (and null for what JSON cannot hold), without the
    // brackets: the chunks join into one array.
    const rowsText = JSON.stringify(chunk).slice(1, -1);
    yield `${first === 0 ? '{"rows":[' : ','}${rowsText}${last === rows ? ']}' : ''}`;
  }
}

/**
 * The answer as a stream that encodes its next chunk only when the last one was taken, and
 * never two in one turn of the event loop: a client that reads as fast as the server writes
 * never backs the connection up, and the chunks would otherwise follow one another in one
 * synchronous run (measured: /health on another connection waited 3.6 s behind a 338 MiB one).
 */
export function jsonAnswerStream(y: Float32Array, rows: number, outFeatures: number): Readable {
  async function* turnByTurn(): AsyncGenerator<string> {
    for (const chunk of jsonChunks(y, rows, outFeatures)) {
      yield chunk;
      // The connections' I/O is polled before the next chunk is encoded.
      await setImmediate();
    }
  }
  // One chunk ahead at most: the stream stops pulling while the connection is backed up.
  return Readable.from(turnByTurn(), { highWaterMark: 1 });
}
