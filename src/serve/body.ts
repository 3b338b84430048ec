/**
 * Request and response bodies of POST /v1/linear.
 *
 * - application/octet-stream: raw little-endian float32, row-major, `inFeatures` per row. The
 *   row count comes from `?rows=` or the `x-omni-rows` header, else from the byte length. The
 *   answer is the same encoding (rows x outFeatures floats) with `x-omni-rows` set.
 * - application/json: `{ "rows": [[...], ...] }`, each row `inFeatures` numbers; the answer is
 *   `{ "rows": [[...], ...] }`, each row `outFeatures` numbers.
 *
 * Octet bodies are copied into a fresh, aligned Float32Array that nobody else holds, so it can
 * be transferred to the worker thread without a second copy.
 *
 * Throws: BadBodyError (400) for a truncated, empty or mis-shaped body; BadRequestError (400)
 * for a malformed rows hint. JSON not in UTF-8 is an UnsupportedMediaTypeError (415), returned.
 */
import { isUtf8 } from 'node:buffer';
import { BadBodyError, BadRequestError, UnsupportedMediaTypeError } from '../errors.js';

/** A /v1/linear body's encoding: 'octet' (raw float32 LE rows) or 'json' ({ "rows": [[...]] }). */
export type BodyEncoding = 'octet' | 'json';

export interface LinearInput {
  readonly x: Float32Array;
  readonly rows: number;
  readonly encoding: BodyEncoding;
}

/**
 * The row count of an octet request (as `?rows=` gives it; without either, taken from the
 * body's length), set on an octet answer too.
 */
export const ROWS_HEADER = 'x-omni-rows';
/** The Content-Type of raw little-endian float32 rows, row-major, in a body and its answer. */
export const OCTET_STREAM = 'application/octet-stream';

/** True on little-endian hosts: the wire's byte order is then the memory's, and copies are flat. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const FLOAT_BYTES = 4;

/** Parses a rows hint (query or header); undefined when absent. */
export function parseRowsHint(query: unknown, header: unknown): number | undefined {
  const fromQuery = parsePositive('rows query parameter', query);
  const fromHeader = parsePositive(`${ROWS_HEADER} header`, header);
  if (fromQuery !== undefined && fromHeader !== undefined && fromQuery !== fromHeader) {
    throw new BadRequestError(
      `rows query parameter (${fromQuery}) and ${ROWS_HEADER} header (${fromHeader}) disagree`,
    );
  }
  return fromQuery ?? fromHeader;
}

function parsePositive(name: string, raw: unknown): number | undefined {
  if (raw === undefined) return undefined;
  const text = Array.isArray(raw) ? undefined : String(raw);
  const value = text !== undefined && /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value))
    throw new BadRequestError(
      `${name} must be a whole number >= 1 in digits alone, without a leading 0, got ${JSON.stringify(raw)}`,
    );
  return value;
}

/** Decodes a parsed body (a Buffer for octet-stream, a value for JSON) into rows of floats. */
export function decodeLinearBody(
  body: unknown,
  rowsHint: number | undefined,
  inFeatures: number,
): LinearInput {
  if (Buffer.isBuffer(body)) return decodeOctets(body, rowsHint, inFeatures);
  if (body === undefined || body === null) throw new BadBodyError('the request has no body');
  return decodeJson(body, rowsHint, inFeatures);
}

/**
 * Why an octet-stream body of `byteLength` bytes cannot be decoded, or undefined when it can:
 * decodeOctets' own checks, also made from a Content-Length before the body is read.
 */
export function octetLengthRefusal(
  byteLength: number,
  rowsHint: number | undefined,
  inFeatures: number,
): BadBodyError | undefined {
  if (byteLength === 0) return new BadBodyError('the request body is empty');
  if (byteLength % FLOAT_BYTES !== 0) {
    return new BadBodyError(`the body holds ${byteLength} bytes: not a whole number of float32 values`);
  }
  const floats = byteLength / FLOAT_BYTES;
  const rows = rowsHint ?? floats / inFeatures;
  if (!Number.isInteger(rows) || rows * inFeatures !== floats) {
    return new BadBodyError(
      rowsHint === undefined
        ? `the body holds ${floats} floats: not a whole number of ${inFeatures}-wide rows`
        : `the body holds ${floats} floats, but ${rows} rows of ${inFeatures} need ${rows * inFeatures}`,
    );
  }
  return undefined;
}

/**
 * The fewest bytes a well-formed body of `rows` rows can take: exact for octets; for JSON the
 * shortest form, `{"rows":[[0,0],[0,0]]}` (10 bytes of frame, then per row one byte per number,
 * a comma between numbers, two brackets and a comma between rows).
 */
export function leastBodyBytes(rows: number, inFeatures: number, encoding: BodyEncoding): number {
  return encoding === 'octet' ? rows * inFeatures * FLOAT_BYTES : 10 + rows * (2 * inFeatures + 2);
}

function decodeOctets(body: Buffer, rowsHint: number | undefined, inFeatures: number): LinearInput {
  const refusal = octetLengthRefusal(body.byteLength, rowsHint, inFeatures);
  if (refusal !== undefined) throw refusal;
  const floats = body.byteLength / FLOAT_BYTES;
  const rows = rowsHint ?? floats / inFeatures;
  const x = new Float32Array(floats);
  if (LITTLE_ENDIAN) new Uint8Array(x.buffer).set(body);
  else for (let i = 0; i < floats; i++) x[i] = body.readFloatLE(i * FLOAT_BYTES);
  return { x, rows, encoding: 'octet' };
}

function decodeJson(body: unknown, rowsHint: number | undefined, inFeatures: number): LinearInput {
  const list =
    typeof body === 'object' && !Array.isArray(body) ? (body as { rows?: unknown }).rows : undefined;
  if (!Array.isArray(list) || list.length === 0) {
    throw new BadBodyError('the JSON body must be { "rows": [[...], ...] } with at least one row');
  }
  if (rowsHint !== undefined && rowsHint !== list.length) {
    throw new BadBodyError(`the rows hint says ${rowsHint} rows, the JSON body has ${list.length}`);
  }
  // Shapes first: only rows of inFeatures numbers each bound the size by the body's (a body of
  // empty rows would otherwise size gigabytes, or more than a typed array holds, by its count).
  for (let r = 0; r < list.length; r++) {
    const row: unknown = list[r];
    if (!Array.isArray(row) || row.length !== inFeatures) {
      throw new BadBodyError(`row ${r} must be an array of ${inFeatures} numbers`);
    }
  }
  const x = new Float32Array(list.length * inFeatures);
  for (let r = 0; r < list.length; r++) {
    const row = list[r] as unknown[];
    for (let c = 0; c < inFeatures; c++) {
      const v: unknown = row[c];
      if (typeof v !== 'number') throw new BadBodyError(`row ${r}, column ${c} is not a number`);
      // JSON can write numbers float32 cannot hold (1e39, 1e999): they would become Infinity and
      // come back as null. Rounding a finite value to the nearest float32 is the format's own.
      if (!Number.isFinite(Math.fround(v))) {
        throw new BadBodyError(`row ${r}, column ${c} (${v}) is outside the float32 range`);
      }
      x[r * inFeatures + c] = v;
    }
  }
  return { x, rows: list.length, encoding: 'json' };
}

/** The octet-stream answer: rows x outFeatures little-endian float32 (a view, no copy, on LE). */
export function encodeOctets(y: Float32Array): Buffer {
  if (LITTLE_ENDIAN) return Buffer.from(y.buffer, y.byteOffset, y.byteLength);
  const out = Buffer.allocUnsafe(y.length * FLOAT_BYTES);
  for (let i = 0; i < y.length; i++) out.writeFloatLE(y[i]!, i * FLOAT_BYTES);
  return out;
}

/** The JSON answer: `{ rows: [[...], ...] }`; a non-finite output is `null` there (JSON has none). */
export function encodeJson(y: Float32Array, rows: number, outFeatures: number): { rows: number[][] } {
  const out: number[][] = new Array(rows);
  for (let r = 0; r < rows; r++) out[r] = Array.from(y.subarray(r * outFeatures, (r + 1) * outFeatures));
  return { rows: out };
}

/**
 * JSON text begins with an ASCII character, so in UTF-8 neither of its first two bytes is 0,
 * and its first is never 0xFE or 0xFF (no UTF-8 byte is). UTF-16 and UTF-32, with or without a
 * byte order mark, always show one of these; any other bytes that are not UTF-8 (Latin-1's
 * `é`) fail `isUtf8`, where decoding would have replaced them without a word. Either is refused
 * as 415, as a charset other than UTF-8 is, instead of being read as a 400 or misread. Returns
 * the error for the parser to report.
 */
export function notUtf8Json(body: Buffer): UnsupportedMediaTypeError | undefined {
  const first = body[0];
  if (first === 0 || first === 0xfe || first === 0xff || body[1] === 0) {
    return new UnsupportedMediaTypeError('the JSON body is not UTF-8 (UTF-16 or UTF-32?); send UTF-8');
  }
  if (!isUtf8(body)) return new UnsupportedMediaTypeError('the JSON body is not valid UTF-8; send UTF-8');
  return undefined;
}
