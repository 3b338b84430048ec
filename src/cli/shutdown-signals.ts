/**
 * SIGTERM and SIGINT for `serve`, listened for from start to end by one pair of listeners: a
 * signal with no listener, even between two awaits or while the HTTP stack is still loading,
 * kills the process instead of draining it. Imports nothing, so the CLI can listen before it
 * loads the serve command (~0.2 s of module loading).
 */

/** Where signals come from: `process`, or an EventEmitter in tests. */
export type SignalSource = Pick<NodeJS.Process, 'on' | 'removeListener'>;

export class ShutdownSignals {
  readonly first: Promise<string>;
  #count = 0;
  #first = '';
  #last = '';
  #resolveFirst: (name: string) => void = () => {};
  #again: (name: string) => void = () => {};
  readonly #source: SignalSource;
  readonly #onTerm = (): void => this.#received('SIGTERM');
  readonly #onInt = (): void => this.#received('SIGINT');

  constructor(source: SignalSource) {
    this.#source = source;
    this.first = new Promise((resolve) => {
      this.#resolveFirst = resolve;
    });
    source.on('SIGTERM', this.#onTerm);
    source.on('SIGINT', this.#onInt);
  }

  /** The first signal's name, or undefined while none has come. */
  get received(): string | undefined {
    return this.#count === 0 ? undefined : this.#first;
  }

  /** Called for every signal after the first (at once for one that already came). */
  onAgain(handler: (name: string) => void): void {
    this.#again = handler;
    if (this.#count > 1) handler(this.#last);
  }

  dispose(): void {
    this.#source.removeListener('SIGTERM', this.#onTerm);
    this.#source.removeListener('SIGINT', this.#onInt);
  }

  #received(name: string): void {
    this.#count++;
    this.#last = name;
    if (this.#count === 1) {
      this.#first = name;
      this.#resolveFirst(name);
    } else {
      this.#again(name);
    }
  }
}
