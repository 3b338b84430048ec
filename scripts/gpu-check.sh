#!/usr/bin/env bash
# GPU acceptance check (CUDA backend): build, parity against the fixture and the TypeScript
# reference, no residue on reused workspaces, GFLOP/s, requests/s through LinearRuntime. Needs an
# NVIDIA GPU + driver; nvcc to build the library there (else the build gpu-bundle.sh carried).
# Then, where compute-sanitizer is installed, the small shapes of gpu-check.mjs --sanitize under
# its memcheck, racecheck and initcheck tools (an access out of bounds, a shared-memory race or a
# read of memory never written, even one that leaves the numbers right), 60 s at most each, and
# only while the check's budget lasts: GPU_CHECK_BUDGET_S (whole seconds from the start, default
# 300; the build and the main check keep their own limits). Their whole output goes to
# GPU_CHECK_LOGS/sanitizer-TOOL.log (default native/build), which a report with host backtraces
# can make long; here each prints its summary, and the log's head on failure. The main check's
# output is also kept there, in gpu-check.log. A tool that refuses the device (gVisor's "Device
# not supported") gives no verdict. Select the GPU with OMNI_CUDA_DEVICE (default 0).
# Exit: 0 pass, 1 a check failed (a sanitizer's report included), 2 the device could not be
# opened, 3 setup or the CUDA build failed (nvcc here failed: the check still runs the carried
# library, for what it can tell, and then exits 3), 124 the check itself ran past its 270 s limit.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
budget=${GPU_CHECK_BUDGET_S:-300}
if ! [[ $budget =~ ^[0-9]+$ ]]; then
  echo "gpu-check: GPU_CHECK_BUDGET_S must be whole seconds, got '$budget'"
  exit 3
fi
# Decimal, as documented: bash's arithmetic reads a leading 0 as octal (09 is an error there).
budget=$((10#$budget))
logs=${GPU_CHECK_LOGS:-native/build}
mkdir -p "$logs" || { echo "gpu-check: cannot create the log folder $logs (GPU_CHECK_LOGS)"; exit 3; }

# A GPU machine may have neither Node nor a registry: scripts/gpu-bundle.sh, run on a development
# machine, packs both into .gpu/ (carry "dist" and ".gpu"); they are used only where missing here.
# A node older than 20 counts as missing: piscina 5 and the built dist/ need 20.
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ -f .gpu/node.xz ] && { ! command -v node >/dev/null || [ "$(node_major)" -lt 20 ]; }; then
  mkdir -p /tmp/omni-node
  if command -v xz >/dev/null; then
    xz -dc .gpu/node.xz >/tmp/omni-node/node
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
      .gpu/node.xz /tmp/omni-node/node
  fi
  chmod +x /tmp/omni-node/node
  export PATH="/tmp/omni-node:$PATH"
  echo "gpu-check: using the carried node $(node --version)"
fi
command -v node >/dev/null || { echo "gpu-check: node is not installed (run scripts/gpu-bundle.sh and carry .gpu)"; exit 3; }
[ "$(node_major)" -ge 20 ] || { echo "gpu-check: node $(node --version) is older than 20 (carry .gpu)"; exit 3; }
export PATH="$PATH:${CUDA_HOME:-/usr/local/cuda}/bin"
if [ ! -d node_modules ] && [ -d .gpu/node_modules ]; then
  ln -s .gpu/node_modules node_modules
  echo "gpu-check: using the carried .gpu/node_modules"
elif [ ! -d node_modules ]; then
  # Fail fast rather than let npm retry an unreachable registry for minutes.
  echo "gpu-check: node_modules missing; running npm ci --offline"
  timeout 120 npm ci --offline --no-audit --no-fund || { echo "gpu-check: npm ci failed; carry .gpu (scripts/gpu-bundle.sh)"; exit 3; }
fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader || true
fi

if [ -e node_modules/.bin/tsc ]; then
  # Other parts of the tree may not type-check mid-development; tsc still emits what this needs.
  timeout 120 node_modules/.bin/tsc -p tsconfig.json ||
    echo "gpu-check: tsc reported errors; continuing with the emitted JavaScript"
elif [ -f dist/src/index.js ]; then
  echo "gpu-check: no TypeScript here; using the carried dist/"
else
  echo "gpu-check: neither TypeScript nor a built dist/ (run scripts/gpu-bundle.sh and carry dist)"
  exit 3
fi
# With a toolkit here, always rebuild: a library carried from another machine may need a newer
# driver than this one has (a CUDA 13 runtime needs driver >= 580).
force=
if command -v nvcc >/dev/null; then
  nvcc --version | tail -n 1 || echo "gpu-check: nvcc --version failed"
  force=--force
fi
# Its output (on stderr, as before) is read back: a CUDA build that failed (nvcc here, and it
# failed) must not pass for one that could not be tried.
build_log="$logs/build-native.log"
cuda_failed=no
built=0
timeout 240 node scripts/build-native.mjs --require-cuda $force 2>"$build_log" || built=$?
cat "$build_log" >&2
if [ "$built" -ne 0 ]; then
  grep -q '^native: cuda build FAILED' "$build_log" && cuda_failed=yes
  # No working compiler here (nvcc, or cc for the fixture): the libraries gpu-bundle.sh carried
  # are the one chance left to run the check at all. Only for what is missing, though: a library
  # still here was built on this machine (native/build is not carried), so it suits this driver,
  # where the carried one may need a newer driver.
  carried=.gpu/native-build
  mkdir -p native/build
  for lib in libomni_cuda.so libomni_fixture.so; do
    [ -f native/build/$lib ] && continue
    [ -f $carried/$lib ] || { echo "gpu-check: $lib did not build here and .gpu carries none"; exit 3; }
    cp $carried/$lib native/build/
    echo "gpu-check: building $lib here failed; using the one carried in $carried ($(cat $carried/built-with 2>/dev/null || echo 'built elsewhere'))"
  done
fi

# What ptxas made of the kernel on this machine: registers, spills, shared memory per arch.
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-resource-usage native/build/libomni_cuda.so 2>&1 | grep -E 'arch|Function|REG' || true
fi

status=0
# Also to a log: the device tool returns only the end of the output, which a long sanitizer report
# below can fill. pipefail: the status is node's (or timeout's), tee's is 0.
timeout 270 node scripts/gpu-check.mjs "$@" 2>&1 | tee "$logs/gpu-check.log" || status=$?
# Only after a check that reached the device: the main figures come first, whatever a sanitizer
# run then costs. A report (the tool's exit 9), a FAIL of the check (1) or a crash fails; a tool
# that ran past its limit, or under which the device or a library would not open (2, 3: some
# sandboxes refuse the tool the device), gave no verdict, which is said but fails nothing.
# A --dry-run makes no CUDA call: there is nothing for a sanitizer to see.
dry_run=no
for arg in "$@"; do [ "$arg" = --dry-run ] && dry_run=yes; done
if [ "$dry_run" = yes ]; then
  :
elif [ "$status" -le 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck initcheck; do
    left=$((budget - (SECONDS - started)))
    if [ "$left" -lt 10 ]; then
      echo "gpu-check: $tool skipped: the $budget s budget is spent; no verdict"
      continue
    fi
    limit=$((left < 60 ? left : 60))
    log="$logs/sanitizer-$tool.log"
    echo "gpu-check: compute-sanitizer --tool $tool (output in $log)"
    rc=0
    timeout "$limit" compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 10 \
      node scripts/gpu-check.mjs --sanitize "$@" >"$log" 2>&1 || rc=$?
    # gVisor: the tool answers "Device not supported", then the check's calls fail (error 999).
    # It checked nothing; the other tools would be refused the same way.
    if grep -qi 'device not supported' "$log"; then
      echo "gpu-check: $tool: compute-sanitizer does not support this device; no verdict"
      break
    fi
    grep -E 'SUMMARY|^FAIL|^gpu-check: (PASS|.*FAILED)' "$log" || true
    case $rc in
      0) echo "gpu-check: $tool ok" ;;
      124) echo "gpu-check: $tool ran past $limit s; no verdict" ;;
      2 | 3) echo "gpu-check: $tool: the check could not start under it (exit $rc); no verdict" ;;
      *)
        head -n 40 "$log"
        echo "gpu-check: $tool FAILED (exit $rc)"
        status=1
        ;;
    esac
  done
elif [ "$status" -le 1 ]; then
  echo "gpu-check: no compute-sanitizer here; the sanitizer runs were skipped"
fi
if [ "$cuda_failed" = yes ] && [ "$status" -eq 0 ]; then
  echo "gpu-check: FAILED: nvcc here could not build libomni_cuda.so (see $build_log); the checks above ran the library built elsewhere"
  status=3
fi
echo "gpu-check: finished in $((SECONDS - started)) s"
exit "$status"
