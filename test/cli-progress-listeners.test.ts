/**
 * The progress bar's signal listeners last as long as the bar: stop() takes them off again, so a
 * process that runs the bench more than once (in-process, as the tests do) does not collect one
 * SIGINT and one SIGTERM listener per run, each holding its bar.
 */
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { Progress } from '../src/cli/progress.js';

/** A stream that says it is a terminal, so the bar (and its listeners) is made. */
function terminal(): NodeJS.WriteStream {
  const stream = new PassThrough();
  stream.resume();
  return Object.assign(stream, {
    isTTY: true,
    columns: 80,
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
  }) as unknown as NodeJS.WriteStream;
}

it('stop() takes off the SIGINT and SIGTERM listeners the bar put on', () => {
  const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
  const progress = new Progress(1, terminal());
  expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(
    before.map((n) => n + 1),
  );
  progress.stop();
  expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
});
