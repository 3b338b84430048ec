/**
 * node:http closes a response with its connection only once the response is attached to it. A
 * pipelined request whose response still waits behind an earlier one is never attached when
 * the client leaves, so that response would never emit 'close': the drain would count it in
 * flight for good, its work would never hear that the client left and no 499 would be recorded.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Makes `res` close with `connection` even while it is queued: the same as node does for an
 * attached response (destroyed, then 'close'), at once if the connection is gone already.
 * Call it after the response's 'close' listeners are in place. Once attached, node's own
 * handling takes over.
 */
export function closeWithConnection(res: ServerResponse, connection: Socket): void {
  if (res.socket !== null) return;
  const onConnectionClose = (): void => {
    res.destroy();
    res.emit('close');
  };
  if (connection.destroyed) {
    onConnectionClose();
    return;
  }
  connection.once('close', onConnectionClose);
  const detach = (): void => {
    connection.removeListener('close', onConnectionClose);
  };
  res.once('socket', detach);
  res.once('close', detach);
}
