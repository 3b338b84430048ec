import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

// This module runs from src/ under vitest (TypeScript) and from dist/src/ once built; worker
// threads always need built JavaScript, so every path is taken from the package root.
const here = fileURLToPath(import.meta.url);

/** The package's root folder (where package.json lives). */
export const packageRoot = resolve(dirname(here), here.endsWith('.ts') ? '..' : '../..');

/** The folder the native libraries are built into by `npm install` / `npm run build`. */
export const nativeBuildDir = join(packageRoot, 'native', 'build');

/** file: URL of a built worker entry under dist/ (`workers/<name>.js` or a path below dist/). */
export function builtModuleUrl(relativeToDist: string): string {
  return pathToFileURL(join(packageRoot, 'dist', relativeToDist)).href;
}
