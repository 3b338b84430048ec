/**
 * The progress bar on a terminal: it hides the cursor and turns line wrap off while the bench
 * runs, so an interrupt must hand both back. Runs the built CLI under `script`, a real
 * pseudo-terminal, and types Ctrl-C as a user would (skipped where `script` is missing).
 */
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CLI } from './fixtures/cli-process.js';
import { tempDirs } from './fixtures/temp-dirs.js';

const newDir = tempDirs('omni-cli-progress-');

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const HIDE_CURSOR = '\x1b[?25l';

describe('bench on a terminal', () => {
  it.skipIf(!hasScript())(
    'Ctrl-C gives the terminal back its cursor and line wrap, and ends the run',
    async () => {
      const command = [
        JSON.stringify(process.execPath),
        JSON.stringify(CLI),
        'bench --duration 30 --calibrate 0.2 --rates 50 --threads 1 --in-features 8 --out-features 8',
        `--out ${JSON.stringify(newDir())}`,
      ].join(' ');
      const child = spawn('script', ['-qfec', command, '/dev/null'], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { ...process.env, OMNI_BACKEND: '' },
      });
      let tty = '';
      let sent = false;
      child.stdout.setEncoding('latin1').on('data', (chunk: string) => {
        tty += chunk;
        if (!sent && tty.includes(HIDE_CURSOR)) {
          sent = true; // the bar has taken the terminal over: Ctrl-C, typed
          child.stdin.write('\x03');
        }
      });
      const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
      expect(sent).toBe(true);
      expect(code === 130 || signal === 'SIGINT').toBe(true);
      const after = tty.slice(tty.lastIndexOf(HIDE_CURSOR));
      expect(after).toContain('\x1b[?25h'); // cursor shown again
      expect(after).toContain('\x1b[?7h'); // line wrap back on
    },
  );
});
