/**
 * The most header lines a request may carry, checked here the same way on every Node. node's
 * own count (server.maxHeadersCount, 1,000 lines unless set) refuses a request over it with a 431
 * only since CVE-2026-58044's fix (22.23.2, 24.18.1, 26.5.1); before (20, 23, 25, and 22, 24 and
 * 26 before those) it left the lines after 1,000 out of req.headers: a Content-Type among them
 * was never read, where a proxy in front may have read it. server.ts turns node's count off (the
 * head stays bounded by node's 16 KiB, maxHeaderSize), so every request arrives whole and this
 * check refuses it with the same 431 everywhere.
 */
import type { IncomingMessage } from 'node:http';
import { OmniError } from '../errors.js';

export const MAX_HEADER_LINES = 1000;

/** How many field lines named `name` (lower case) a request carries. */
export function fieldLines(raw: IncomingMessage, name: string): number {
  // rawHeaders alternates names and values, as received.
  const entries = raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < entries.length; i += 2) if (entries[i]?.toLowerCase() === name) count++;
  return count;
}

/**
 * Whether the field lines named `name` (lower case) carry values that differ, case and spaces
 * aside. Read on every request: nothing is made unless a second such line is there.
 */
export function fieldValuesDiffer(raw: IncomingMessage, name: string): boolean {
  const entries = raw.rawHeaders;
  let first: string | undefined;
  for (let i = 0; i < entries.length; i += 2) {
    if (entries[i]?.toLowerCase() !== name) continue;
    const value = entries[i + 1]!;
    if (first === undefined) first = value;
    else if (value.trim().toLowerCase() !== first.trim().toLowerCase()) return true;
  }
  return false;
}

/** Throws the 431 of a request with more than MAX_HEADER_LINES header lines. */
export function checkHeaderLines(raw: IncomingMessage): void {
  // rawHeaders alternates names and values: two entries a line.
  const lines = raw.rawHeaders.length / 2;
  if (lines > MAX_HEADER_LINES) {
    throw new OmniError(
      'OMNI_ERR_HEADERS_TOO_LARGE',
      `a request may carry at most ${MAX_HEADER_LINES} header lines; this one has ${lines}`,
    );
  }
}
