/**
 * WaitQueue, the intrusive FIFO behind each instance's waiters: its own contract, which no path
 * of BoundedAdmission exercises on its own today (a node removed twice, the tail leaving).
 */
import { describe, expect, it } from 'vitest';
import { type QueueNode, WaitQueue } from '../src/admission/wait-queue.js';

describe('WaitQueue', () => {
  // Kills: wait-queue.ts remove() without its `if (!node.queued) return false` guard. No path of
  // BoundedAdmission removes a waiter twice today, so only the unit's own contract shows it.
  it('remove() of a node that already left returns false and changes nothing', () => {
    const node = (): QueueNode => ({ prev: undefined, next: undefined, queued: false });
    const queue = new WaitQueue<QueueNode>();
    const a = node();
    const b = node();
    const c = node();
    queue.push(a);
    queue.push(b);
    queue.push(c);
    expect(queue.remove(b)).toBe(true);
    expect(queue.remove(b)).toBe(false);
    expect(queue.size).toBe(2);
    expect(queue.head).toBe(a);
    expect(queue.remove(a)).toBe(true);
    expect(queue.head).toBe(c);
    expect(queue.remove(c)).toBe(true);
    expect(queue.size).toBe(0);
    expect(queue.head).toBeUndefined();
  });

  // Kills: wait-queue.ts remove() leaving #tail on a removed tail node: the next push hangs off
  // the removed node and is lost to the queue (only the stress test noticed).
  it('keeps FIFO order after the tail leaves: a later push follows the nodes still queued', () => {
    const node = (): QueueNode => ({ prev: undefined, next: undefined, queued: false });
    const queue = new WaitQueue<QueueNode>();
    const [a, b, c] = [node(), node(), node()];
    queue.push(a);
    queue.push(b);
    expect(queue.remove(b)).toBe(true);
    queue.push(c);
    expect(queue.remove(a)).toBe(true);
    expect(queue.head).toBe(c);
    expect(queue.size).toBe(1);
  });
});
