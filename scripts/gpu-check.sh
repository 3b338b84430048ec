#!/usr/bin/env bash
# GPU acceptance check (CUDA backend): build, parity against the fixture and the TypeScript
# reference, no residue on reused workspaces, GFLOP/s, requests/s through LinearRuntime. Needs an
# NVIDIA GPU + driver; nvcc to build the library there (else a carried native/build is used).
# Finishes in well under 5 minutes. Select the GPU with OMNI_CUDA_DEVICE (default 0).
# Exit: 0 pass, 1 a check failed, 2 the device could not be opened, 3 setup or the CUDA build
# failed, 124 the check itself ran past its 270 s limit.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

command -v node >/dev/null || { echo "gpu-check: node is not installed"; exit 3; }
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
if [ ! -d node_modules ]; then
  # A GPU machine may have no registry: fail fast rather than let npm retry for minutes.
  echo "gpu-check: node_modules missing; running npm ci --offline"
  timeout 120 npm ci --offline --no-audit --no-fund || { echo "gpu-check: npm ci failed; carry node_modules"; exit 3; }
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader || true
fi

# Other parts of the tree may not type-check mid-development; tsc still emits what this needs.
timeout 120 node_modules/.bin/tsc -p tsconfig.json ||
  echo "gpu-check: tsc reported errors; continuing with the emitted JavaScript"
# With a toolkit here, always rebuild: a library carried from another machine may need a newer
# driver than this one has (a CUDA 13 runtime needs driver >= 580).
force=
if command -v nvcc >/dev/null; then
  nvcc --version | tail -n 1
  force=--force
fi
timeout 240 node scripts/build-native.mjs --require-cuda $force || exit 3

timeout 270 node scripts/gpu-check.mjs "$@"
echo "gpu-check: finished in $((SECONDS - started)) s"
