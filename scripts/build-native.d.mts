// Types for scripts/build-native.mjs, so TypeScript tests can build library variants.
export declare const nativeBuildDir: string;
export declare const fixtureDir: string;
/** `-I` flags for the ABI header and the code both backends share. */
export declare const nativeIncludeArgs: readonly string[];
export declare function fixtureSources(): string[];
export interface BuildResult {
  path: string;
  built: boolean;
  /** Set when the CUDA build was not attempted (no nvcc). */
  skipped?: string;
  /** With `skipped`: the library there, kept, is older than its sources. */
  stale?: boolean;
}
export interface BuildOptions {
  outDir?: string;
  /** Extra preprocessor definitions, `NAME=VALUE` without `-D`. */
  defines?: string[];
  force?: boolean;
}
export declare function buildFixture(options?: BuildOptions): BuildResult;
export declare function buildCuda(options?: BuildOptions & { nvcc?: string | null }): BuildResult;
export declare function findNvcc(env?: NodeJS.ProcessEnv): string | null;
export declare function fixtureArgs(output: string, defines?: string[]): string[];
export declare function cudaArgs(output: string, defines?: string[]): string[];
