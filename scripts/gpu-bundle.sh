#!/usr/bin/env bash
# Prepares, on a development machine, what scripts/gpu-check.sh needs on a GPU machine that has
# neither Node nor a package registry: the built dist/ and a .gpu/ folder holding this machine's
# node binary (xz-compressed), the only packages the check loads (koffi with its linux-x64
# prebuild, piscina) and the native libraries built here (used there only if building fails). The device tool carries ignored paths only when named, so the check is run
# there with carry ["dist", ".gpu"]; gpu-check.sh unpacks .gpu/ when node or node_modules is
# missing. Together they stay far below the 64 MiB a carried tree may hold (about 30 MB).
# Exit: 0 ready, 1 a step failed.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -d node_modules ] || { echo "gpu-bundle: run npm ci first"; exit 1; }
npm run build >/dev/null
rm -rf .gpu
mkdir -p .gpu/node_modules/@koromix
# Only what dist/src/index.js reaches outside node:*: the HTTP front and the bench CLI are not
# loaded by the check. @napi-rs/nice is piscina's optional thread-priority helper.
for pkg in koffi @koromix/koffi-linux-x64 piscina @napi-rs/nice @napi-rs/nice-linux-x64-gnu; do
  if [ -d "node_modules/$pkg" ]; then
    mkdir -p ".gpu/node_modules/$(dirname "$pkg")"
    cp -R "node_modules/$pkg" ".gpu/node_modules/$pkg"
  fi
done
for required in koffi @koromix/koffi-linux-x64 piscina; do
  [ -d ".gpu/node_modules/$required" ] || { echo "gpu-bundle: node_modules/$required is missing"; exit 1; }
done
# The libraries built here, for a GPU machine where building fails (no nvcc, no cc). The CUDA one
# only if it is current: one older than its sources (no nvcc here to redo it) or one whose build
# just failed would stand in there for code it was not built from.
mkdir -p .gpu/native-build
cp native/build/libomni_fixture.so .gpu/native-build/
# One line: "current VERSION" (built here by that nvcc), "carried" (no nvcc here; the library there
# is newer than its sources), or why there is none to bundle.
cuda=$(node --input-type=module -e "
  import { execFileSync } from 'node:child_process';
  import { existsSync } from 'node:fs';
  const { buildCuda, findNvcc } = await import('./scripts/build-native.mjs');
  let r;
  try { r = buildCuda(); } catch { r = { failed: true }; }
  if (r.failed) console.log('its build failed');
  else if (r.stale) console.log('older than its sources, and no nvcc here');
  else if (!existsSync(r.path)) console.log('none built, and no nvcc here');
  else if (r.skipped) console.log('carried');
  else console.log('current ' + execFileSync(findNvcc(), ['--version'], { encoding: 'utf8' }).trim().split('\\n').pop());
")
case $cuda in
  current*) cp native/build/libomni_cuda.so .gpu/native-build/; echo "${cuda#current }" >.gpu/native-build/built-with ;;
  carried) cp native/build/libomni_cuda.so .gpu/native-build/; echo 'unknown CUDA: not built where it was bundled' >.gpu/native-build/built-with ;;
  *) echo "gpu-bundle: WARNING: no libomni_cuda.so to carry ($cuda); the GPU machine must build it" ;;
esac
node_bin=$(command -v node)
echo "gpu-bundle: compressing $node_bin ($(node --version)); about half a minute"
xz -T0 -6 -c "$node_bin" >.gpu/node.xz
node --version >.gpu/node.version
echo "gpu-bundle: ready, $(du -sh .gpu | cut -f1) in .gpu/ and $(du -sh dist | cut -f1) in dist/"
echo "gpu-bundle: on the GPU machine run: bash scripts/gpu-check.sh   with carry: [\"dist\", \".gpu\"]"
