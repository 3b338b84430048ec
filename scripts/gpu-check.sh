#!/usr/bin/env bash
# GPU acceptance check (CUDA backend): build, parity against the fixture and the TypeScript
# reference, no residue on reused workspaces, GFLOP/s, requests/s through LinearRuntime. Needs an
# NVIDIA GPU + driver and nvcc.
# Finishes in well under 5 minutes. Select the GPU with OMNI_CUDA_DEVICE (default 0).
# Exit: 0 pass, 1 a check failed, 2 the device could not be opened, 3 the CUDA build failed.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
if [ ! -d node_modules ]; then
  echo "gpu-check: node_modules missing; running npm ci"
  npm ci --no-audit --no-fund
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L || true
fi

# Other parts of the tree may not type-check mid-development; tsc still emits what this needs.
npx tsc -p tsconfig.json || echo "gpu-check: tsc reported errors; continuing with the emitted JavaScript"
node scripts/build-native.mjs --require-cuda || exit 3

timeout 270 node scripts/gpu-check.mjs "$@"
echo "gpu-check: finished in $((SECONDS - started)) s"
