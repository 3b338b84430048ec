/**
 * What holdNextConnection() (serve-harness.ts) models of node: a write the kernel has not taken
 * (its client reads nothing) is called back with no error when its connection is destroyed, as
 * if it were out. A raw answer's write callback alone (client-error.ts) cannot tell an answer
 * the drain or the send timeout cut off from one sent.
 */
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';

const ends: (() => void)[] = [];
afterEach(() => {
  for (const end of ends.splice(0)) end();
});

it('a write still in this process when its connection is destroyed is called back without error', async () => {
  const accepted = new Promise<Socket>((resolve) => {
    const server = createServer(resolve);
    ends.push(() => server.close());
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no port');
      const client = connect({ host: '127.0.0.1', port: address.port });
      client.pause();
      ends.push(() => client.destroy());
    });
  });
  const connection = await accepted;
  // Far more than loopback's socket buffers hold: most of it stays in this process.
  const called = new Promise<Error | null | undefined>((resolve) =>
    connection.write(Buffer.alloc(64 * 1024 * 1024), resolve),
  );
  expect(connection.writableLength).toBeGreaterThan(0);
  connection.destroy();
  expect(await called).toBeNull();
  expect(connection.destroyed).toBe(true);
});
