/**
 * The progress bar on stderr while the benchmark runs (cli-progress). Quiet when stderr is not
 * a terminal: piped or captured output gets only the results.
 */
import { Presets, SingleBar } from 'cli-progress';

export interface ProgressCounts {
  readonly sent: number;
  readonly completed: number;
  readonly refused: number;
  readonly deadline: number;
  readonly depth: number;
}

export class Progress {
  readonly #bar: SingleBar | undefined;
  readonly #totalS: number;
  #doneS = 0;
  #phaseStart = 0;
  #phase = '';

  /** `totalS`: planned seconds (calibration plus every phase's arrival window). */
  constructor(totalS: number, stream: NodeJS.WriteStream = process.stderr) {
    this.#totalS = totalS;
    if (!stream.isTTY) return;
    this.#bar = new SingleBar(
      {
        stream,
        format:
          '{bar} {percentage}% | {phase} | sent {sent} ok {completed} refused {refused} late {deadline} depth {depth}',
        hideCursor: true,
        clearOnComplete: true,
        fps: 8,
      },
      Presets.shades_classic,
    );
    // The bar hides the cursor and turns line wrap off; a Ctrl-C must give both back before the
    // signal ends the process as it would have.
    process.once('SIGINT', this.#onSignal);
    process.once('SIGTERM', this.#onSignal);
    this.#bar.start(Math.round(totalS * 10), 0, {
      phase: 'starting',
      sent: 0,
      completed: 0,
      refused: 0,
      deadline: 0,
      depth: 0,
    });
  }

  /** A new phase of `plannedS` seconds begins. */
  phase(label: string): void {
    this.#phase = label;
    this.#phaseStart = performance.now();
    this.#bar?.update({ phase: label });
  }

  /** The phase's planned seconds are over (drains do not move the bar). */
  phaseDone(plannedS: number): void {
    this.#doneS += plannedS;
    this.#bar?.update(Math.round(Math.min(this.#doneS, this.#totalS) * 10), { phase: this.#phase });
  }

  update(counts: ProgressCounts, plannedS: number): void {
    if (!this.#bar) return;
    const inPhase = Math.min(plannedS, (performance.now() - this.#phaseStart) / 1000);
    this.#bar.update(Math.round(Math.min(this.#doneS + inPhase, this.#totalS) * 10), {
      phase: this.#phase,
      ...counts,
    });
  }

  stop(): void {
    process.off('SIGINT', this.#onSignal);
    process.off('SIGTERM', this.#onSignal);
    this.#bar?.stop();
  }

  readonly #onSignal = (signal: NodeJS.Signals): void => {
    this.stop();
    // With this listener gone, the signal's default action ends the process (exit 128 + n).
    process.kill(process.pid, signal);
  };
}
