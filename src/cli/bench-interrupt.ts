/**
 * SIGINT, SIGTERM and SIGHUP during `omni-runtime bench`. An interrupted run writes no partial
 * results (a run cut short compares some loads on one mode only, and its charts would read as a
 * whole run's): it removes the --out folder it made if nothing was written into it, says on
 * stderr what it left, and then lets the signal end the process as it would have (exit 128 + n:
 * 130, 143, 129), so a shell or a script that runs the benchmark sees it interrupted, not failed
 * or done. SIGHUP is a terminal that closed under the run: stopped by it as by Ctrl-C, not killed
 * with its empty folder left behind. (Node resets an inherited SIG_IGN at start, so `nohup` never
 * kept a bench alive: listening changes no run that SIGHUP did not already end.)
 */
import type { SignalSource } from './shutdown-signals.js';

/** Ends the process by `signal`'s default action; tests replace it. */
export type Raise = (signal: NodeJS.Signals) => void;

export const raiseSignal: Raise = (signal) => {
  // Called with no listener left for it: the default action ends the process here.
  process.kill(process.pid, signal);
};

/** The signals that interrupt a run. */
export const INTERRUPTS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Calls `handler` on the first of INTERRUPTS; returns what takes the listeners off again. */
export function onInterrupt(source: SignalSource, handler: (signal: NodeJS.Signals) => void): () => void {
  const listeners = INTERRUPTS.map((signal) => [signal, (): void => handler(signal)] as const);
  for (const [signal, listener] of listeners) source.on(signal, listener);
  return () => {
    for (const [signal, listener] of listeners) source.removeListener(signal, listener);
  };
}
