/**
 * SIGINT and SIGTERM during `omni-runtime bench`. An interrupted run writes no partial results
 * (a run cut short compares some loads on one mode only, and its charts would read as a whole
 * run's): it removes the --out folder it made if nothing was written into it, says on stderr what
 * it left, and then lets the signal end the process as it would have (exit 128 + n: 130, 143), so
 * a shell or a script that runs the benchmark sees it interrupted, not failed or done.
 */
import type { SignalSource } from './shutdown-signals.js';

/** Ends the process by `signal`'s default action; tests replace it. */
export type Raise = (signal: NodeJS.Signals) => void;

export const raiseSignal: Raise = (signal) => {
  // Called with no listener left for it: the default action ends the process here.
  process.kill(process.pid, signal);
};

/** Calls `handler` on the first SIGINT or SIGTERM; returns what takes the listeners off again. */
export function onInterrupt(source: SignalSource, handler: (signal: NodeJS.Signals) => void): () => void {
  const onInt = (): void => handler('SIGINT');
  const onTerm = (): void => handler('SIGTERM');
  source.on('SIGINT', onInt);
  source.on('SIGTERM', onTerm);
  return () => {
    source.removeListener('SIGINT', onInt);
    source.removeListener('SIGTERM', onTerm);
  };
}
