#!/usr/bin/env bash
# Runs the test suite (or the vitest arguments given) on another Node, fetched once from the npm
# registry (node-<platform>-<arch>, Node's own binary as a package; npm checks its integrity)
# into a cache, without touching the machine's node. dist/ and the native fixture must be built
# already (`npm run build`, by the machine's node: their output is the same on every version).
#   bash scripts/test-on-node.sh 24.22.3 [vitest arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: bash scripts/test-on-node.sh VERSION [vitest arguments...]}
shift
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "test-on-node: '$version' is not a version like 24.22.3" >&2; exit 2; }
package="node-$(node -p process.platform)-$(node -p process.arch)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/omni-runtime/$package-$version"
bin="$cache/node_modules/$package/bin"
if [ ! -x "$bin/node" ]; then
  # Into a fresh folder, moved into place once whole: a run cut short leaves no half-installed Node.
  mkdir -p "$(dirname "$cache")"
  partial=$(mktemp -d "$cache.XXXXXX.partial")
  trap 'rm -rf "$partial"' EXIT
  echo '{"private":true}' > "$partial/package.json"
  npm install --prefix "$partial" --no-audit --no-fund --no-save --no-package-lock --loglevel=error \
    "$package@$version" >&2
  rm -rf "$cache"
  mv "$partial" "$cache"
  trap - EXIT
fi
[ "$("$bin/node" --version)" = "v$version" ] || { echo "test-on-node: $bin/node is not v$version" >&2; exit 1; }
echo "test-on-node: Node $version ($bin/node)" >&2
PATH="$bin:$PATH" exec npx vitest run "$@"
