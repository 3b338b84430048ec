#!/usr/bin/env node
// Builds the native libraries into native/build/ (run by `npm run build`, hence by pretest):
//   libomni_fixture.so  with cc (required: everything falls back to it; a failure exits non-zero)
//   libomni_cuda.so     with nvcc when it is on PATH or under CUDA_HOME/bin (optional: a missing or
//                       failing nvcc is reported and the script still exits 0)
// A library older than its sources whose rebuild fails is removed rather than left to load as if
// it were the current one (the loader checks only the ABI version). Without nvcc a CUDA library
// is kept, as it may have been built elsewhere and carried here, and one older than its sources
// is reported as such.
// A library is rebuilt only when a source, a header or this script is newer than it, or when the
// recipe it was built from (compiler, arguments, the inputs' names: written beside it) differs,
// so `npm test` stays fast. Outputs are written to a temporary name and renamed, so a process
// that has the old library mapped never sees a half-written file.
import { spawnSync } from 'node:child_process';
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const includeDir = join(root, 'native', 'include');
// Code both backends compile (cc and nvcc), private to them: not part of the ABI.
const commonDir = join(root, 'native', 'common');
export const fixtureDir = join(root, 'native', 'fixture');
const cudaDir = join(root, 'native', 'cuda');
export const nativeBuildDir = join(root, 'native', 'build');

const listed = (dir, exts) =>
  readdirSync(dir)
    .filter((f) => exts.some((e) => f.endsWith(e)))
    .sort()
    .map((f) => join(dir, f));

function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

function upToDate(output, inputs) {
  const out = mtime(output);
  return out >= 0 && inputs.every((p) => mtime(p) <= out);
}

/**
 * Runs a compiler; throws, with its `status`, `stdout` and `stderr`, if it fails. What it says
 * when it succeeds (warnings: -Wall -Wextra) goes to stderr: kept back, they were never seen.
 */
function run(cmd, args) {
  const ran = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (ran.error) throw ran.error;
  if (ran.status !== 0) {
    const how = ran.status === null ? `was killed by ${ran.signal}` : `exited ${ran.status}`;
    throw Object.assign(new Error(`${cmd} ${how}`), {
      status: ran.status,
      stdout: ran.stdout,
      stderr: ran.stderr,
    });
  }
  const said = [ran.stdout, ran.stderr].join('').trim();
  if (said) console.error(said);
}

/** The file beside a library that records the recipe it was built from. */
const recipeFile = (output) => `${output}.recipe`;

/**
 * A build's recipe: the compiler and its arguments (the output's name and this checkout's place
 * left out), and the names of the inputs, so a source removed or added, another compiler (CC) or
 * other defines rebuild the library, which the inputs' times alone do not tell.
 */
function recipeOf(cmd, args, inputs) {
  const placeless = (text) => text.replaceAll(root, '<root>');
  return `${JSON.stringify({ cmd, args: args.map(placeless), inputs: inputs.map(placeless) }, null, 1)}\n`;
}

/**
 * Whether `output` is newer than its inputs and was built from `recipe`. A library with no
 * recipe beside it (carried from another machine, or built before recipes were written) is taken
 * on its times alone, as before.
 */
function current(output, inputs, recipe) {
  if (!upToDate(output, inputs)) return false;
  try {
    return readFileSync(recipeFile(output), 'utf8') === recipe;
  } catch {
    return true;
  }
}

/**
 * Compiles into a temporary file renamed to `output`, dated when the compile began (a source
 * edited while it ran is then newer than the library, and rebuilds it next time), its recipe
 * written beside it.
 */
function compileTo(output, recipe, compile) {
  mkdirSync(dirname(output), { recursive: true });
  const tmp = `${output}.${process.pid}.tmp`;
  const began = new Date();
  try {
    compile(tmp);
    utimesSync(tmp, began, began);
    renameSync(tmp, output);
  } finally {
    rmSync(tmp, { force: true });
  }
  writeFileSync(recipeFile(output), recipe);
}

/** Where both backends find the ABI header and the code they share. */
export const nativeIncludeArgs = [`-I${includeDir}`, `-I${commonDir}`];

/** The fixture's C sources, for a build of them with other flags (test/native-sanitizers). */
export function fixtureSources() {
  return listed(fixtureDir, ['.c']);
}

/** cc command line for the fixture; `defines` are extra `NAME=VALUE` strings (no `-D`). */
export function fixtureArgs(output, defines = []) {
  return [
    '-std=gnu11',
    '-O3',
    '-fPIC',
    '-shared',
    '-fvisibility=hidden',
    '-Wall',
    '-Wextra',
    ...nativeIncludeArgs,
    ...defines.map((d) => `-D${d}`),
    ...fixtureSources(),
    '-o',
    output,
    '-lm',
  ];
}

/**
 * Builds the CPU fixture. `outDir`/`defines` let a test build a variant (e.g. a mismatching ABI
 * version) into its own folder. Returns the library path and whether it was (re)built.
 */
export function buildFixture({ outDir = nativeBuildDir, defines = [], force = false } = {}) {
  const output = join(outDir, 'libomni_fixture.so');
  const inputs = [
    ...listed(fixtureDir, ['.c', '.h']),
    ...listed(includeDir, ['.h']),
    ...listed(commonDir, ['.h']),
    fileURLToPath(import.meta.url),
  ];
  const cc = process.env.CC || 'cc';
  const recipe = recipeOf(cc, fixtureArgs('<output>', defines), inputs);
  if (!force && defines.length === 0 && current(output, inputs, recipe))
    return { path: output, built: false };
  try {
    compileTo(output, recipe, (tmp) => run(cc, fixtureArgs(tmp, defines)));
  } catch (err) {
    // As for CUDA: a library older than its sources must not pass for the current one (an
    // up-to-date one that --force failed to redo stays).
    if (!upToDate(output, inputs)) rmSync(output, { force: true });
    throw err;
  }
  return { path: output, built: true };
}

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** nvcc from PATH, else CUDA_HOME/bin (or CUDA_PATH/bin); null when there is none. */
export function findNvcc(env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, 'nvcc'))) return join(dir, 'nvcc');
  }
  for (const home of [env.CUDA_HOME, env.CUDA_PATH]) {
    if (home && isExecutable(join(home, 'bin', 'nvcc'))) return join(home, 'bin', 'nvcc');
  }
  return null;
}

/** nvcc command line: sm_80 and sm_90 code plus compute_90 PTX for newer GPUs to JIT. */
export function cudaArgs(output, defines = []) {
  return [
    '-O3',
    '-std=c++17',
    '-shared',
    '-Xcompiler',
    '-fPIC,-fvisibility=hidden',
    '-cudart',
    'static',
    '-gencode',
    'arch=compute_80,code=sm_80',
    '-gencode',
    'arch=compute_90,code=[sm_90,compute_90]',
    ...nativeIncludeArgs,
    ...defines.map((d) => `-D${d}`),
    ...listed(cudaDir, ['.cu']),
    '-o',
    output,
  ];
}

/** Builds the CUDA library; `{ skipped }` says why it did not (no nvcc). Throws if nvcc fails. */
export function buildCuda({ outDir = nativeBuildDir, defines = [], force = false, nvcc = findNvcc() } = {}) {
  const output = join(outDir, 'libomni_cuda.so');
  const inputs = [
    ...listed(cudaDir, ['.cu', '.cuh']),
    ...listed(includeDir, ['.h']),
    ...listed(commonDir, ['.h']),
    fileURLToPath(import.meta.url),
  ];
  if (nvcc === null) {
    // Kept (it may be a library built elsewhere, carried here), but said when it is stale.
    const stale = existsSync(output) && !upToDate(output, inputs);
    return { path: output, built: false, skipped: 'nvcc not found on PATH or under CUDA_HOME/bin', stale };
  }
  const recipe = recipeOf(nvcc, cudaArgs('<output>', defines), inputs);
  if (!force && defines.length === 0 && current(output, inputs, recipe))
    return { path: output, built: false };
  try {
    compileTo(output, recipe, (tmp) => run(nvcc, cudaArgs(tmp, defines)));
  } catch (err) {
    // A library older than its sources must not pass for the current one (an up-to-date one
    // that --force failed to redo stays).
    if (!upToDate(output, inputs)) rmSync(output, { force: true });
    throw err;
  }
  return { path: output, built: true };
}

// One word of a POSIX shell command line: the command printed above is there to be pasted into a
// shell, and a project's path may hold a space.
function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

// Compiler output can run to hundreds of lines; the first errors are the ones that matter.
function failureText(err, maxLines = 40) {
  const text = [err.stderr, err.stdout].filter((s) => typeof s === 'string' && s.length > 0).join('\n');
  const lines = (text || String(err.message)).split('\n');
  const more = lines.length > maxLines ? `\n... (${lines.length - maxLines} more lines)` : '';
  return lines.slice(0, maxLines).join('\n') + more;
}

// --force rebuilds regardless of timestamps; --require-cuda (gpu-check) makes a skipped or failed
// CUDA build an error instead of a warning; --optional (the package's install step) makes a failed
// fixture build a warning too: BoundedAdmission and Runtime need no native library, and a missing
// C compiler must not fail a dependent project's install. Progress goes to stderr, so it never
// mixes into a caller's stdout (`npm pack --json`).
function main() {
  const force = process.argv.includes('--force');
  const requireCuda = process.argv.includes('--require-cuda');
  const optional = process.argv.includes('--optional');
  let fixtureFailed = false;
  try {
    const fixture = buildFixture({ force });
    console.error(`native: fixture ${fixture.built ? 'built' : 'up to date'}: ${fixture.path}`);
  } catch (err) {
    console.error(`native: fixture build FAILED (cc):\n${failureText(err)}`);
    if (optional) {
      console.error(
        'native: WARNING: LinearRuntime and `omni-runtime bench|serve` need this library; install a C ' +
          `compiler (cc) and run: node ${shellWord(fileURLToPath(import.meta.url))}`,
      );
      return;
    }
    // gpu-check.sh can stand in a carried fixture, but only a CUDA library built on the GPU
    // machine is sure to suit its driver: still build that one, then fail.
    if (!requireCuda) process.exit(1);
    fixtureFailed = true;
  }
  try {
    const cuda = buildCuda({ force });
    if (cuda.stale) {
      console.error(
        `native: WARNING: ${cuda.path} is older than its sources and there is no nvcc here to rebuild it`,
      );
    }
    if (cuda.skipped && requireCuda && existsSync(cuda.path)) {
      // A GPU machine without a toolkit can still run a library built elsewhere (carried over).
      console.error(`native: WARNING: ${cuda.skipped}; using the prebuilt ${cuda.path} as it is`);
    } else if (cuda.skipped) {
      console.error(`native: cuda skipped: ${cuda.skipped}`);
      if (requireCuda) process.exit(1);
    } else {
      console.error(`native: cuda ${cuda.built ? 'built' : 'up to date'}: ${cuda.path}`);
    }
  } catch (err) {
    if (requireCuda) {
      console.error(`native: cuda build FAILED (nvcc):\n${failureText(err)}`);
      process.exit(1);
    }
    console.error(
      `native: WARNING: cuda build failed; continuing with the fixture only:\n${failureText(err)}`,
    );
  }
  if (fixtureFailed) process.exit(1);
}

// Both sides by their real path: Node resolves symlinks in import.meta.url, and this script is
// often run through one (node node_modules/omni-runtime/scripts/build-native.mjs under pnpm,
// npm link or a folder dependency).
function isMain() {
  try {
    return realpathSync(fileURLToPath(import.meta.url)) === realpathSync(resolve(process.argv[1] ?? ''));
  } catch {
    return false;
  }
}
if (isMain()) main();
