/**
 * A FIFO of waiters with O(1) removal from anywhere, so a waiter that gives up (abort,
 * timeout) leaves at once instead of lingering until it reaches the head.
 */
export interface QueueNode {
  prev: QueueNode | undefined;
  next: QueueNode | undefined;
  queued: boolean;
}

export class WaitQueue<T extends QueueNode> {
  #head: T | undefined;
  #tail: T | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get head(): T | undefined {
    return this.#head;
  }

  push(node: T): void {
    node.prev = this.#tail;
    node.next = undefined;
    node.queued = true;
    if (this.#tail) this.#tail.next = node;
    else this.#head = node;
    this.#tail = node;
    this.#size += 1;
  }

  /** Removes `node`; returns false when it had already left. */
  remove(node: T): boolean {
    if (!node.queued) return false;
    node.queued = false;
    if (node.prev) node.prev.next = node.next;
    else this.#head = node.next as T | undefined;
    if (node.next) node.next.prev = node.prev;
    else this.#tail = node.prev as T | undefined;
    node.prev = undefined;
    node.next = undefined;
    this.#size -= 1;
    return true;
  }
}
