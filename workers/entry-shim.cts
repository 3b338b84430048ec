/**
 * What piscina loads as each runtime thread's file, in place of entry.js. piscina first
 * `require()`s its file; on Node 20.19+ that loads an ES module through require(esm), which
 * instantiates entry.js's whole import graph synchronously before it finds the top-level await
 * and throws. A thread terminated inside that instantiation (close with a timeout, a forced
 * close, a stuck replacement) makes Node call v8::Module::IsGraphAsync on a module whose
 * instantiation was cut off: a fatal V8 check that aborts the whole process. This file is
 * CommonJS, so the require succeeds; entry.js loads through import(), whose asynchronous
 * loader survives termination.
 *
 * The export is a promise of entry's handler, which piscina finds under its default task name
 * (the only one the runtime uses) and awaits before its ready message, so entry's top level (the
 * `loaded` count) still runs first. Should entry.js fail to load, piscina's import() fallback
 * finds the same rejected promise and the thread ends with that error, as it did when piscina
 * imported entry.js itself.
 */
export = import('./entry.js').then((entry) => entry.default);
