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
    closeLingering(this);
  };
}

/**
 * Sends the server's FIN after what was written, then lingers as above. Also for answers
 * node:http does not close itself (a request it could not parse, see client-error.ts).
 */
export function closeLingering(socket: Socket): void {
  if (socket.writable) socket.end();
  if (socket.writableFinished) linger(socket);
  else socket.once('finish', () => linger(socket));
}

function linger(socket: Socket): void {
  if (socket.destroyed) return;
  // The client closed its side first (a half-close after its request): nothing more to wait for.
  if (socket.readableEnded) {
    socket.destroy();
    return;
  }
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
