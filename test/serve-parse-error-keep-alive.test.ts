/**
 * The head of an answer to a body that failed to parse once it was whole (malformed JSON, an
 * empty JSON body, JSON in UTF-16). fastify adds `Connection: close` to such an answer; the
 * server takes it back (the connection stays in step, serve-legal-http.test.ts), and the head
 * must then say about the connection what node says for any other answer: `Connection:
 * keep-alive` with its `Keep-Alive: timeout`, or `close` where node closes. Taken back with
 * removeHeader alone it said nothing: an HTTP/1.0 keep-alive client reads that as a close, and
 * an HTTP/1.1 one hears no idle timeout. Real sockets on 127.0.0.1, port 0, the gated fixture
 * worker with its gate open (none of these reaches it).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { firstAnswerHead } from './fixtures/serve-client.js';
import { sharedServed } from './fixtures/serve-harness.js';

const shared = sharedServed({ inFeatures: 4, outFeatures: 3, open: true, admission: { requests: 4 } });
afterAll(shared.close);

function jsonRequest(version: string, connection: string, body: Buffer): Buffer {
  const head =
    `POST /v1/linear ${version}\r\nHost: x\r\n${connection}Content-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

/** The status and the head's lines about the connection, names lowercased. */
async function connectionLines(port: number, request: Buffer): Promise<string[]> {
  const head = await firstAnswerHead(port, request);
  const lines = head.split('\r\n');
  const about = lines.filter((l) => /^(connection|keep-alive):/i.test(l));
  return [lines[0] ?? '', ...about.map((l) => l.replace(/^[^:]+/, (name) => name.toLowerCase()))];
}

const FAILED_BODIES: [string, Buffer, string][] = [
  ['malformed JSON', Buffer.from('{"rows": [[1,'), '400'],
  ['an empty JSON body', Buffer.alloc(0), '400'],
  ['JSON in UTF-16', Buffer.from('{"rows":[]}', 'utf16le'), '415'],
  ['prototype poisoning', Buffer.from('{"__proto__": {"rows": 1}}'), '400'],
];

describe.each([
  ['HTTP/1.1', 'HTTP/1.1', ''],
  ['HTTP/1.0 with keep-alive', 'HTTP/1.0', 'Connection: keep-alive\r\n'],
  ['HTTP/1.1 with Connection: close', 'HTTP/1.1', 'Connection: close\r\n'],
])('%s', (_name, version, connection) => {
  it.each(FAILED_BODIES)(
    '%s: the head says of the connection what a 400 for a body that parsed says',
    async (_kind, body, status) => {
      const { s } = await shared();
      // Valid JSON, no rows: a 400 of the route's, never touched by fastify's parser error path.
      const parsed = await connectionLines(s.port, jsonRequest(version, connection, Buffer.from('{}')));
      const failed = await connectionLines(s.port, jsonRequest(version, connection, body));
      expect(failed[0]).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(failed.slice(1)).toEqual(parsed.slice(1));
      // What node says, so the comparison is not between two heads that both say nothing.
      expect(parsed.slice(1)[0]).toMatch(
        connection === '' || version === 'HTTP/1.0' ? /keep-alive/ : /close/,
      );
    },
  );
});
