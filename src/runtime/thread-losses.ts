/**
 * Threads piscina has removed (dead, or terminated), and the pool's own abandonment or teardown,
 * counted in the turn they happen. piscina rejects a thread's call in the turn it removes the
 * thread, and a pool's queued calls in the turn it is destroyed; a call that fails with no reply
 * while this count stayed put never reached a thread: its input could not be posted (see
 * task-failure.ts). One object the runtime makes before its pool: a dispatched call reads it
 * with a property load, no call. A file of its own, without piscina's types: the published
 * declarations reach it through PendingTask, and piscina's own .d.ts fails a consumer's check
 * under exactOptionalPropertyTypes with skipLibCheck off (package-types.test.ts).
 */
export interface ThreadLosses {
  count: number;
}
