/**
 * Closing a connection in stages (RFC 9112 9.6). node:http closes a connection after an answer
 * that ends it (`Connection: close`: a body refused before it was read, a client's own close)
 * at once; bytes the client still sends (the rest of a refused upload, requests it pipelined)
 * then reach a closed socket, whose reset can make the client fail before it reads the answer.
 * Here the server sends its FIN after the answer, then reads and drops whatever still comes
 * until the client closes too, or LINGER_MS pass.
 */
import type { Socket } from 'node:net';

/** How long a closing connection waits for the client to close its side. */
export const LINGER_MS = 2_000;

/** Makes node:http's close after a final answer (its `destroySoon`) a lingering one. */
export function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function lingeringClose(this: Socket): void {
    if (this.writable) this.end();
    if (this.writableFinished) linger(this);
    else this.once('finish', () => linger(this));
  };
}

function linger(socket: Socket): void {
  if (socket.destroyed) return;
  // No request after the close is parsed, let alone run: node's parser is fed by its own 'data'
  // listener, or reads the socket itself until any 'data' listener is added (node then hands
  // the socket back to 'data' events).
  socket.removeAllListeners('data');
  socket.on('data', () => {});
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  // The wait must not hold a process that is otherwise done.
  timer.unref();
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
  socket.resume();
}
