/**
 * koffi, loaded on first use rather than when the package is imported. Its native module comes
 * in an optional dependency (@koromix/koffi-<platform>) or from koffi's own install script; a
 * project can have neither (installed with --omit=optional or from a lock file made on another
 * platform, with koffi's script not allowed), and must still import the package for
 * BoundedAdmission and Runtime, which need no native code. Native work then fails with a coded
 * error that says how to get the module.
 *
 * Loaded with require(): the import is synchronous, as loadNativeLibrary is, and a top-level
 * await would make the package unloadable by require(esm). koffi's CommonJS and ES entries
 * both hand out the same native module object (its `default`).
 */
import { createRequire } from 'node:module';
import type Koffi from 'koffi';
import { LibraryNotFoundError } from '../errors.js';

type KoffiModule = typeof Koffi;

let loaded: KoffiModule | undefined;

/** koffi's native module; LibraryNotFoundError (OMNI_ERR_LIBRARY_NOT_FOUND) when it cannot load. */
export function koffi(): KoffiModule {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  let path = 'koffi';
  try {
    path = require.resolve('koffi');
    loaded = (require('koffi') as { default: KoffiModule }).default;
  } catch (err) {
    throw new LibraryNotFoundError(
      path,
      `koffi, which loads the native libraries, could not load its own native module: ${(err as Error).message} ` +
        `(it comes in koffi's optional dependency @koromix/koffi-${process.platform}-${process.arch}: ` +
        'reinstall without --omit=optional, or build it with: npm rebuild koffi)',
    );
  }
  return loaded;
}
