/**
 * What holdNextConnection() (serve-harness.ts) models of node: a write the kernel has not taken
 * (its client reads nothing) is called back when its connection is destroyed, before node 22.9
 * with no error, as if it were out, since then with ECANCELED. There a raw answer's write callback
 * alone (client-error.ts) cannot tell an answer the drain or the send timeout cut off from one
 * sent: the connection's being destroyed by then does.
 */
import { connect, createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { nodeAtLeast } from './fixtures/node-version.js';
import { cancelledWriteError } from './fixtures/serve-harness.js';

const ends: (() => void)[] = [];
afterEach(() => {
  for (const end of ends.splice(0)) end();
});

async function cancelledWrite(): Promise<{ called: Error | null | undefined; connection: Socket }> {
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
  return { called: await called, connection };
}

// nodejs/node#54032 (node 22.9, measured: 22.8 calls back null): onWriteComplete reads the write's status before the stream's state.
it.runIf(!nodeAtLeast(22, 9))(
  'a write still in this process when its connection is destroyed is called back without error',
  async () => {
    const { called, connection } = await cancelledWrite();
    expect(called).toBeNull();
    expect(connection.destroyed).toBe(true);
    expect(cancelledWriteError()).toBeNull();
  },
);

it.runIf(nodeAtLeast(22, 9))(
  'a write still in this process when its connection is destroyed is called back with ECANCELED',
  async () => {
    const { called, connection } = await cancelledWrite();
    expect(called).toMatchObject({ code: 'ECANCELED', syscall: 'write' });
    expect(connection.destroyed).toBe(true);
    expect(cancelledWriteError()).toMatchObject({
      code: 'ECANCELED',
      syscall: 'write',
      errno: (called as NodeJS.ErrnoException).errno,
    });
  },
);
