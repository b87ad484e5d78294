#!/usr/bin/env bash
# install-deps.sh: install the Debian packages eventlog-sink needs to build
# and test, and only those that are missing.
#
# The list: the C toolchain and autotools (build-essential autoconf
# automake libtool pkg-config), GHC 9.0.2 (with haddock, hsc2hs and hp2ps)
# and the ghc-events reader (ghc libghc-ghc-events-dev) for the examples
# and end-to-end tests, binutils' nm and objcopy (the tests read symbol
# tables and the constructors' order with them), GHC's
# profiling libraries (ghc-prof: the profiled RTS ways the patched RTS
# build covers, and base & co. for `-prof` programs), clang for the
# sanitizer and fuzzing builds, and what the live monitor's tests drive
# (tmux for `top`, chromium for `serve`'s page, prometheus for its
# /metrics and its rules, prometheus-alertmanager for the alerts that
# `serve --all` takes, curl and python3 to talk to them), and the OTLP
# exporter's schema checkers (protobuf-compiler's protoc decodes a request
# body strictly; python3-protobuf parses OTLP/JSON strictly with the
# modules protoc generates).  Already-installed packages are
# detected with dpkg-query, so a second run does nothing and needs no
# network.  Uses sudo only when not root and sudo exists.  Package sources
# are whatever apt is configured with: this script names no mirror.
#
# `--demo` installs only what scripts/demo.sh needs (the toolchain,
# autotools, GHC and ghc-events), so that a first result comes in minutes;
# the test command installs the rest.
#
# Usage: scripts/install-deps.sh [--demo] [--check]
#   --demo    only the demo's packages.
#   --check   only report what is missing (exit 1 if anything is).
set -euo pipefail

demo_packages=(build-essential autoconf automake libtool pkg-config
               ghc libghc-ghc-events-dev)
packages=("${demo_packages[@]}" binutils ghc-prof cabal-install clang libclang-rt-dev
          tmux chromium prometheus prometheus-alertmanager curl python3
          protobuf-compiler python3-protobuf)

check_only=0
for a in "$@"; do
    case "$a" in
        --demo) packages=("${demo_packages[@]}") ;;
        --check) check_only=1 ;;
        *) echo "usage: $0 [--demo] [--check]" >&2; exit 2 ;;
    esac
done

installed() {
    local status
    status=$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) || return 1
    [ "$status" = installed ]
}

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: dpkg-query not found: this script supports Debian and derivatives;" >&2
    echo "install-deps: install by hand: ${packages[*]}" >&2
    exit 1
fi

missing=()
for p in "${packages[@]}"; do
    installed "$p" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all present: ${packages[*]}"
    exit 0
fi

echo "install-deps: missing: ${missing[*]}"
[ "$check_only" -eq 0 ] || exit 1

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        as_root=(sudo)
    else
        echo "install-deps: not root and no sudo: install ${missing[*]} as root" >&2
        exit 1
    fi
fi

# prometheus and prometheus-alertmanager ship services that their
# postinst starts (listening on :9090 and :9093) where no policy says
# otherwise; the tests start instances of their own on free loopback
# ports, so none is wanted.  Debian's way to say so is a policy-rc.d that
# denies starts (exit 101), as containers have: put one in place for the
# install only when there is none, and take it away after.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# install-deps.sh: no service starts during this install\nexit 101\n' |
        "${as_root[@]}" tee "$policy" >/dev/null
    "${as_root[@]}" chmod 755 "$policy"
    made_policy=1
    trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
if [ "$made_policy" -eq 1 ]; then
    "${as_root[@]}" rm -f "$policy"
    trap - EXIT
fi

# Verify: apt-get can succeed without installing what was asked (held
# packages, a virtual package).
still=()
for p in "${missing[@]}"; do
    installed "$p" || still+=("$p")
done
if [ "${#still[@]}" -ne 0 ]; then
    echo "install-deps: still missing after apt-get install: ${still[*]}" >&2
    exit 1
fi
echo "install-deps: installed: ${missing[*]}"
