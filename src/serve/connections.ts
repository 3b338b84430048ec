/**
 * The connections a server holds open (omni_http_connections), on each of its addresses: from
 * when one is accepted until it closes, with a request in flight or not (a head still arriving,
 * an idle or lingering connection: a client holding one is seen nowhere else).
 */
import type { Socket } from 'node:net';

export class OpenConnections {
  #count = 0;
  readonly #waiting: (() => void)[] = [];

  /** Connections accepted and not yet closed. */
  get count(): number {
    return this.#count;
  }

  /** A server 'connection' listener: counts `socket` until it says 'close'. */
  readonly add = (socket: Socket): void => {
    this.#count++;
    socket.once('close', this.#closed);
  };

  readonly #closed = (): void => {
    this.#count--;
    if (this.#count === 0) for (const wake of this.#waiting.splice(0)) wake();
  };

  /**
   * Resolves once none is open. node says 'close' to a connection a turn of the event loop
   * after it was destroyed, after its server's own close: a drain that resolved then left the
   * gauge counting the connections it had closed.
   */
  allClosed(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
    });
  }
}
