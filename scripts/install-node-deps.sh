#!/usr/bin/env bash
# install-node-deps.sh: install what the tests take from the npm registry
# (tests/node/package.json: playwright-core, which drives Debian's
# chromium; OpenTelemetry's schema packages, whose .proto files the OTLP
# tests decode with) exactly as tests/node/package-lock.json pins them.
#
# `npm ci` runs only when tests/node/node_modules is missing or older than
# the lockfile, so a second run does nothing and needs no network.  The
# lockfile records no download addresses (tests/node/.npmrc), so the
# registry is whatever npm is configured with.  No package's install
# scripts run: nothing here needs them (playwright-core never downloads a
# browser; the tests use /usr/bin/chromium).
#
# Usage: scripts/install-node-deps.sh [--check]
#   --check   only report whether they are installed (exit 1 if not).
set -euo pipefail
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/node" && pwd)
stamp=$dir/node_modules/.installed-from-lock

if [ -f "$stamp" ] && [ "$stamp" -nt "$dir/package-lock.json" ] &&
   [ "$stamp" -nt "$dir/package.json" ]; then
    echo "install-node-deps: up to date: $dir/node_modules"
    exit 0
fi
[ "${1:-}" != --check ] || { echo "install-node-deps: missing: $dir/node_modules" >&2; exit 1; }
if ! command -v npm >/dev/null 2>&1; then
    echo "install-node-deps: npm not found: install Node.js and npm (Debian: nodejs npm)" >&2
    exit 1
fi
(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund)
touch "$stamp"
echo "install-node-deps: installed into $dir/node_modules"
