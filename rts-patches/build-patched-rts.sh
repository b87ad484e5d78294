#!/usr/bin/env bash
# build-patched-rts.sh: build the eventlog-sink patched GHC RTS beside the
# installed GHC, without rebuilding GHC and without touching /usr.
#
# It checks that the installed GHC is the version the series is for (BASE),
# obtains that GHC's source (a given tree or tarball, else Debian's source
# package through apt), applies the series (in `series` order, patch -p1) to
# a copy of the pristine rts/ and includes/, finds every RTS C file whose
# preprocessed text the series changes in each installed static RTS way,
# recompiles exactly those with the flags GHC's own build uses (checked
# against the installed objects by --self-check), compiles the C files the
# series adds, and assembles patched libHSrts*.a archives in a shadow GHC
# libdir ($OUT/lib: symlinks to the installed libdir, a patched rts/, a
# shadow include/ and a package db whose rts entry points at them) plus a
# `ghc-eventlog-sink` command (the installed ghc with -B$OUT/lib).  A
# second run redoes only what changed.  It does not patch Cmm or assembly
# members (it stops if the series would change one), does not build the
# dynamic RTS (-dynamic programs keep the stock .so), and does not check
# the rules a series must keep (rts-patches/README) beyond the header and
# Cmm checks it reports.
#
# Usage:
#   build-patched-rts.sh --series DIR --out DIR [--ghc-source DIR|TARBALL]
#                        [--ghc GHC] [--jobs N]
#   build-patched-rts.sh ... --self-check [RTS-FILE...]   (flags vs stock)
#   build-patched-rts.sh ... --check-prefixes --scratch DIR [--ways W,W...]
#       (--ways: build only those ways, e.g. thr_l; default every way.
#       Also for a plain build: the other ways stay the stock archives,
#       as `make patched-rts-thr_l` does for the demo; the prefix 1..N
#       is not rebuilt when --out was built from the same series)
#   build-patched-rts.sh ... --object-cache DIR   (objects shared by key)
#   build-patched-rts.sh --out DIR --install LIBDIR BINDIR [--final-libdir D]
#   build-patched-rts.sh --print-deb-src
#
# Exit: 0 built (or skipped: GHC is not the series' BASE, then
# $OUT/bin/ghc-eventlog-sink does not exist and $OUT/SKIPPED says why),
# 1 on error with one line saying what failed.
set -euo pipefail
export LC_ALL=C

prog=build-patched-rts
say()  { echo "$prog: $*"; }
die()  { echo "$prog: error: $*" >&2; exit 1; }
warn() { echo "$prog: warning: $*" >&2; }

# ---------------------------------------------------------------------------
# Workers run through xargs -P: `$0 --_pp ...`, `$0 --_cc ...`.  They get
# their context from the environment the main run exports.
# ---------------------------------------------------------------------------

# norm_deps ROOT INC DEPFILE: the dependencies gcc -MD wrote, one per line,
# relative to the tree (rts/...), public headers as includes/..., system
# headers dropped.  "a/b/../c" is collapsed so the names compare.
norm_deps() {
    sed -e 's/\\$//' -e 's/^[^:]*://' "$3" | tr ' ' '\n' | sed '/^$/d' |
    awk -v root="$1/" -v inc="$2/" -v inc2="${ELS_RTS_STOCK_INC:-}/" '
        function canon(p,   n, a, i, out, k, st) {
            n = split(p, a, "/"); k = 0
            for (i = 1; i <= n; i++) {
                if (a[i] == "." || a[i] == "") continue
                if (a[i] == ".." && k > 0) { k--; continue }
                st[++k] = a[i]
            }
            out = st[1]; for (i = 2; i <= k; i++) out = out "/" st[i]
            return out
        }
        {
            p = $0
            if (index(p, root) == 1) p = substr(p, length(root) + 1)
            if (index(p, inc) == 1) p = "includes/" substr(p, length(inc) + 1)
            else if (inc2 != "/" && index(p, inc2) == 1) p = "includes/" substr(p, length(inc2) + 1)
            if (substr(p, 1, 1) == "/") next
            print canon(p)
        }' | sort -u
}

# pp_argv SIDE WAY SRC OUT DEP: the gcc command that preprocesses SRC
# exactly as `ghc -c` compiles it for WAY (captured from ghc, see
# capture_argv), with line markers dropped (-P): only text that reaches
# the compiler counts as a change.
pp_run() {
    local side=$1 way=$2 src=$3 out=$4 dep=$5 a skip=0 args=()
    local -a cap
    mapfile -d '' cap <"$ELS_RTS_WORK/flags/$side.$way.argv"
    for a in "${cap[@]:1}"; do
        if [ "$skip" -eq 1 ]; then skip=0; continue; fi
        case $a in
            -o) skip=1 ;;
            -S) ;;
            "$ELS_RTS_PROBE") args+=("$src") ;;
            *) args+=("$a") ;;
        esac
    done
    # shellcheck disable=SC2046
    "${cap[0]}" "${args[@]}" $(file_extra_cc "$src") -E -P -MD -MF "$dep" -MT x -o "$out"
}

# file_extra_cc SRC: per-file C options from rts/ghc.mk (9.0.2), as gcc
# options.  Order matters as in the real build: they come last.
file_extra_cc() {
    local v=$ELS_RTS_VERSION
    case $1 in
        rts/RtsMessages.c|rts/Trace.c) echo "-DProjectVersion=\"$v\"" ;;
        rts/RtsUtils.c)
            echo "-DProjectVersion=\"$v\"" \
                 "-DHostPlatform=\"$ELS_RTS_HOST\"" "-DHostArch=\"${ELS_RTS_HOST%%-*}\"" \
                 "-DHostOS=\"${ELS_RTS_HOST##*-}\"" "-DHostVendor=\"$(echo "$ELS_RTS_HOST" | cut -d- -f2)\"" \
                 "-DBuildPlatform=\"$ELS_RTS_BUILD\"" "-DBuildArch=\"${ELS_RTS_BUILD%%-*}\"" \
                 "-DBuildOS=\"${ELS_RTS_BUILD##*-}\"" "-DBuildVendor=\"$(echo "$ELS_RTS_BUILD" | cut -d- -f2)\"" \
                 "-DTargetPlatform=\"$ELS_RTS_TARGET\"" "-DTargetArch=\"${ELS_RTS_TARGET%%-*}\"" \
                 "-DTargetOS=\"${ELS_RTS_TARGET##*-}\"" "-DTargetVendor=\"$(echo "$ELS_RTS_TARGET" | cut -d- -f2)\"" \
                 "-DGhcUnregisterised=\"$ELS_RTS_UNREG\"" "-DTablesNextToCode=\"$ELS_RTS_TNTC\"" ;;
        rts/Hash.c) echo "-O3" ;;
        rts/sm/Compact.c) echo "-Wno-inline -finline-limit=2500" ;;
        rts/sm/Evac.c|rts/sm/Evac_thr.c) echo "-funroll-loops" ;;
        rts/StgCRun.c) echo "-w" ;;
    esac
}

# way_ghc_flags SIDE WAY: the ghc options for one RTS way (mk/ways.mk,
# rts/ghc.mk: STANDARD_OPTS, rts_CC_OPTS, GhcRtsCcOpts, the debug ways'
# -O0 -g3, RtsWay).  The objects are split into sections like Debian's
# (SplitSections), and __FILE__ of public headers reads "includes/..." as
# in GHC's own build, whichever include dir we compile against.
way_ghc_flags() {
    local side=$1 way=$2 inc wayopts hc cc
    wayopts=$(sed -n "s/^WAY_${way}_HC_OPTS *= *//p" "$ELS_RTS_PRISTINE/mk/ways.mk" | tail -n 1)
    [ -n "$wayopts" ] || { echo "no WAY_${way}_HC_OPTS in mk/ways.mk" >&2; return 1; }
    if [ "$side" = patched ]; then inc=$ELS_RTS_SHADOW/include; else inc=$ELS_RTS_STOCK_INC; fi
    hc="-O2"
    cc="-optc-O2 -optc-fomit-frame-pointer -optc-g"
    case $way in
        *debug*) hc="$hc -O0"
                 cc="$cc -optc-fno-omit-frame-pointer -optc-O0 -optc-g3" ;;
    esac
    # Word-split on purpose: none of these contain spaces.
    echo "-c $wayopts $hc -this-unit-id rts -I$inc -Irts" \
         "-optc-DCOMPILING_RTS -optc-DFS_NAMESPACE=rts" \
         "-optc-Wall -optc-Wextra -optc-Wstrict-prototypes -optc-Wmissing-prototypes" \
         "-optc-Wmissing-declarations -optc-Wpointer-arith -optc-Wredundant-decls" \
         "-optc-Wno-aggregate-return" \
         "-optc-fno-strict-aliasing -optc-fno-common" \
         "$cc -optc-ffunction-sections -optc-fdata-sections" \
         "-optc-fmacro-prefix-map=$inc=includes -optc-fmacro-prefix-map=$ELS_RTS_STOCK_INC=includes" \
         "'-optc-DRtsWay=\"rts_$way\"'"
}

# cc_run SIDE WAY SRC OBJ: compile one RTS C file with ghc, from the root
# of the SIDE tree (so __FILE__ reads rts/... as in GHC's build), then
# strip it the way Debian strips the installed archives.
cc_run() {
    local side=$1 way=$2 src=$3 obj=$4 root extra f
    if [ "$side" = patched ]; then root=$ELS_RTS_PATCHED; else root=$ELS_RTS_PRISTINE; fi
    extra=()
    for f in $(file_extra_cc "$src"); do extra+=("-optc$f"); done
    mkdir -p "$(dirname "$obj")"
    # shellcheck disable=SC2046
    (cd "$root" && eval "set -- $(way_ghc_flags "$side" "$way")" &&
        "$ELS_RTS_GHC" "$@" "${extra[@]}" "$src" -o "$obj.tmp.o") || return 1
    strip --strip-debug --remove-section=.comment --remove-section=.note "$obj.tmp.o"
    mv -f "$obj.tmp.o" "$obj"
}

case ${1:-} in
    --_pp)
        # --_pp SIDE WAY SRC: preprocess into the SIDE cache; write
        # SRC.hash and SRC.deps (normalised).
        side=$2 way=$3 src=$4
        d=$ELS_RTS_WORK/pp-$side/$way
        mkdir -p "$(dirname "$d/$src")"
        if [ "$side" = patched ]; then root=$ELS_RTS_PATCHED; inc=$ELS_RTS_SHADOW/include
        else root=$ELS_RTS_PRISTINE; inc=$ELS_RTS_STOCK_INC; fi
        cd "$root"
        if ! pp_run "$side" "$way" "$src" "$d/$src.i" "$d/$src.d" 2>"$d/$src.err"; then
            echo "$prog: error: preprocessing $src ($side, way $way) failed:" >&2
            head -n 20 "$d/$src.err" >&2
            exit 1
        fi
        sha256sum <"$d/$src.i" | cut -d' ' -f1 >"$d/$src.hash"
        norm_deps "$root" "$inc" "$d/$src.d" >"$d/$src.deps"
        # The patched text is kept: it keys the object's stamp.
        [ "$side" = patched ] || rm -f "$d/$src.i"
        rm -f "$d/$src.d" "$d/$src.err"
        exit 0 ;;
    --_cc)
        # --_cc SIDE WAY SRC OBJ KEY: compile; on success write OBJ.key.
        side=$2 way=$3 src=$4 obj=$5 key=$6
        log=$obj.log
        mkdir -p "$(dirname "$obj")"
        if ! cc_run "$side" "$way" "$src" "$obj" >"$log" 2>&1; then
            echo "$prog: error: compiling $src (way $way) failed:" >&2
            sed 's/^/  /' "$log" | head -n 40 >&2
            exit 1
        fi
        if [ -s "$log" ] && grep -q 'warning:' "$log"; then
            echo "$prog: warnings in $src (way $way):" >&2
            grep -A3 'warning:' "$log" | head -n 20 | sed 's/^/  /' >&2
        fi
        echo "$key" >"$obj.key"
        exit 0 ;;
esac

# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------
series_dir='' out='' ghc_source='' ghc=${GHC:-} jobs=2 mode=build
scratch='' obj_cache='' install_libdir='' install_bindir='' final_libdir=''
only_ways=''
self_check_files=()
while [ $# -gt 0 ]; do
    case $1 in
        --series) series_dir=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --ghc-source) ghc_source=$2; shift 2 ;;
        --ghc) ghc=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --self-check) mode='self-check'; shift
            while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do self_check_files+=("$1"); shift; done ;;
        --check-prefixes) mode=prefixes; shift ;;
        --scratch) scratch=$2; shift 2 ;;
        --object-cache) obj_cache=$2; shift 2 ;;
        --ways) only_ways=$2; shift 2 ;;
        --install) mode=install; install_libdir=$2; install_bindir=$3; shift 3 ;;
        --final-libdir) final_libdir=$2; shift 2 ;;
        --print-deb-src) mode=print-deb-src; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (see --help)" ;;
    esac
done
case $jobs in ''|*[!0-9]*|0) die "--jobs wants a positive number, not '$jobs'" ;; esac

# ---------------------------------------------------------------------------
# Debian source package: derive a deb-src entry from the apt configuration
# (never a host name of our own) and download the orig tarball.
# ---------------------------------------------------------------------------
apt_etc=${ELS_APT_ETC:-/etc/apt}   # overridable for testing the derivation
deb_src_file=$apt_etc/sources.list.d/eventlog-sink-deb-src.sources

have_deb_src() {
    grep -Eqs '^[[:space:]]*Types:.*deb-src' "$apt_etc"/sources.list.d/*.sources && return 0
    grep -Eqs '^[[:space:]]*deb-src[[:space:]]' "$apt_etc"/sources.list "$apt_etc"/sources.list.d/*.list
}

# derive_deb_src: print deb822 deb-src stanzas for the distribution's own
# `deb` entries: those whose suites are the release codename or
# codename-something (third-party repositories rarely publish sources).
derive_deb_src() {
    local codename
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || { echo "cannot tell the release codename from /etc/os-release" >&2; return 1; }
    {
        for f in "$apt_etc"/sources.list.d/*.sources; do
            [ -f "$f" ] || continue
            awk -v cn="$codename" '
                function flush(   i, n, s, ok) {
                    if (types ~ /(^|[[:space:]])deb([[:space:]]|$)/ && uris != "" && enabled != "no") {
                        n = split(suites, s, /[[:space:]]+/); ok = 0
                        for (i = 1; i <= n; i++) if (s[i] == cn || index(s[i], cn "-") == 1) ok = 1
                        if (ok) {
                            print "Types: deb-src"; print "URIs: " uris
                            print "Suites: " suites; print "Components: " comps
                            if (signed != "") print "Signed-By: " signed
                            print ""
                        }
                    }
                    types = uris = suites = comps = signed = enabled = ""
                }
                /^[[:space:]]*#/ { next }
                /^[[:space:]]*$/ { flush(); next }
                /^Types:/ { sub(/^Types:[[:space:]]*/, ""); types = $0; next }
                /^URIs:/ { sub(/^URIs:[[:space:]]*/, ""); uris = $0; next }
                /^Suites:/ { sub(/^Suites:[[:space:]]*/, ""); suites = $0; next }
                /^Components:/ { sub(/^Components:[[:space:]]*/, ""); comps = $0; next }
                /^Signed-By:/ { sub(/^Signed-By:[[:space:]]*/, ""); signed = $0; next }
                /^Enabled:/ { sub(/^Enabled:[[:space:]]*/, ""); enabled = $0; next }
                END { flush() }' "$f"
        done
        for f in "$apt_etc"/sources.list "$apt_etc"/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            # deb [opts] URI SUITE COMPONENT...
            awk -v cn="$codename" '
                $1 != "deb" { next }
                {
                    i = 2; signed = ""
                    if ($2 ~ /^\[/) {
                        for (; i <= NF; i++) {
                            if ($i ~ /^\[?signed-by=/) { s = $i; sub(/^\[?signed-by=/, "", s); sub(/\]$/, "", s); signed = s }
                            if ($i ~ /\]$/) { i++; break }
                        }
                    }
                    uri = $i; suite = $(i + 1); comps = ""
                    for (j = i + 2; j <= NF; j++) comps = comps (comps == "" ? "" : " ") $j
                    if (suite != cn && index(suite, cn "-") != 1) next
                    print "Types: deb-src"; print "URIs: " uri
                    print "Suites: " suite; print "Components: " comps
                    if (signed != "") print "Signed-By: " signed
                    print ""
                }' "$f"
        done
    }
}

if [ "$mode" = print-deb-src ]; then
    derive_deb_src
    exit 0
fi

# as_root CMD...: run CMD as root (directly, or through sudo -n).
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo -n "$@"
    else return 126; fi
}

fetch_debian_source() {
    local dir=$1 base=$2 entry
    mkdir -p "$dir"
    if [ -f "$dir/ghc_$base.orig.tar.xz" ]; then return 0; fi
    say "downloading the GHC $base source (Debian source package 'ghc') into $dir"
    if (cd "$dir" && apt-get source --download-only -q ghc >"$dir/apt.log" 2>&1) &&
       [ -f "$dir/ghc_$base.orig.tar.xz" ]; then
        :
    else
        if [ "$(id -u)" -ne 0 ] && ! { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; then
            die "apt-get source ghc failed and adding a deb-src entry needs root (or sudo); run as root, or pass --ghc-source DIR|TARBALL (configure --with-ghc-source=...) with the GHC $base source"
        fi
        if ! have_deb_src; then
            entry=$(derive_deb_src) || die "cannot derive a deb-src entry from $apt_etc"
            [ -n "$entry" ] || die "no Debian 'deb' entry for this release in $apt_etc to derive a deb-src entry from; pass --ghc-source"
            say "adding $deb_src_file (deb-src for the configured Debian mirror)"
            printf '%s\n' "$entry" | as_root tee "$deb_src_file" >/dev/null \
                || die "cannot write $deb_src_file"
        fi
        say "apt-get update"
        as_root apt-get update -q >>"$dir/apt.log" 2>&1 \
            || { tail -n 5 "$dir/apt.log" >&2; die "apt-get update failed (log: $dir/apt.log)"; }
        (cd "$dir" && apt-get source --download-only -q ghc >>"$dir/apt.log" 2>&1) \
            || { tail -n 5 "$dir/apt.log" >&2; die "apt-get source ghc failed (log: $dir/apt.log); pass --ghc-source"; }
    fi
    [ -f "$dir/ghc_$base.orig.tar.xz" ] \
        || die "apt fetched no ghc_$base.orig.tar.xz (got: $(cd "$dir" && ls | tr '\n' ' ')); pass --ghc-source"
}

# ---------------------------------------------------------------------------
# Install mode: copy a built shadow libdir to LIBDIR, re-point the package
# db there, write BINDIR/ghc-eventlog-sink.  The symlinks point at the
# installed GHC (absolute), so they stay valid.
# ---------------------------------------------------------------------------
[ -n "$out" ] || die "--out DIR is required"
case $out in /*) ;; *) out=$(pwd)/$out ;; esac

if [ "$mode" = install ]; then
    [ -x "$out/bin/ghc-eventlog-sink" ] || die "no patched RTS built in $out (run the build first)"
    [ -n "$final_libdir" ] || final_libdir=$install_libdir
    realghc=$(sed -n 's/^exec "\([^"]*\)".*/\1/p' "$out/bin/ghc-eventlog-sink")
    [ -x "$realghc" ] || die "cannot find the ghc binary named in $out/bin/ghc-eventlog-sink"
    rm -rf "$install_libdir"
    mkdir -p "$install_libdir" "$install_bindir"
    cp -a "$out/lib/." "$install_libdir/"
    sed -i -e "s|$out/lib|$final_libdir|g" "$install_libdir/package.conf.d/rts.conf"
    "$(dirname "$realghc")/ghc-pkg" --global-package-db="$install_libdir/package.conf.d" recache
    write_wrapper() {
        cat <<EOF
#!/bin/sh
# ghc-eventlog-sink: GHC $(cat "$out/lib/.base") linking programs against the
# eventlog-sink patched RTS (static ways only; -dynamic uses the stock RTS).
exec "$realghc" -B"$1" \${1+"\$@"}
EOF
    }
    write_wrapper "$final_libdir" >"$install_bindir/ghc-eventlog-sink"
    chmod 755 "$install_bindir/ghc-eventlog-sink"
    say "installed the patched RTS libdir in $install_libdir and $install_bindir/ghc-eventlog-sink"
    exit 0
fi

# ---------------------------------------------------------------------------
# Version: the series is for exactly one GHC.
# ---------------------------------------------------------------------------
[ -n "$series_dir" ] || die "--series DIR is required"
[ -f "$series_dir/BASE" ] || die "$series_dir/BASE is missing"
series_dir=$(cd "$series_dir" && pwd)
base=$(tr -d ' \n' <"$series_dir/BASE")
[ -n "$ghc" ] || ghc=$(command -v ghc 2>/dev/null || true)
[ -n "$ghc" ] || die "no ghc found (pass --ghc GHC)"
version=$("$ghc" --numeric-version 2>/dev/null) || die "$ghc --numeric-version failed"
mkdir -p "$out"
if [ "$version" != "$base" ]; then
    msg="GHC $version found; the RTS patch series is for $base; skipping the patched RTS"
    say "$msg"
    rm -f "$out/bin/ghc-eventlog-sink"
    echo "$msg" >"$out/SKIPPED"
    exit 0
fi
rm -f "$out/SKIPPED"

libdir=$("$ghc" --print-libdir)
realghc=$libdir/bin/ghc
ghcpkg=$libdir/bin/ghc-pkg
[ -x "$realghc" ] || die "the ghc binary is not at $realghc (from $ghc --print-libdir)"
[ -x "$ghcpkg" ] || die "ghc-pkg is not at $ghcpkg"
[ -f "$libdir/include/Rts.h" ] || die "no RTS headers in $libdir/include"

work=$out/work
shadow=$out/lib
mkdir -p "$work" "$shadow"
info=$("$ghc" --info)
info_field() { printf '%s\n' "$info" | sed -n "s/^ *,(\"$1\",\"\(.*\)\")\$/\1/p" | head -n 1; }

export ELS_RTS_WORK=$work ELS_RTS_SHADOW=$shadow ELS_RTS_STOCK_INC=$libdir/include
export ELS_RTS_GHC=$ghc ELS_RTS_VERSION=$version
export ELS_RTS_PRISTINE=$work/pristine ELS_RTS_PATCHED=$work/patched
ELS_RTS_HOST=$(info_field "Host platform"); ELS_RTS_BUILD=$(info_field "Build platform")
ELS_RTS_TARGET=$(info_field "Target platform"); ELS_RTS_UNREG=$(info_field "Unregisterised")
ELS_RTS_TNTC=$(info_field "Tables next to code")
export ELS_RTS_HOST ELS_RTS_BUILD ELS_RTS_TARGET ELS_RTS_UNREG ELS_RTS_TNTC
export ELS_RTS_PROBE=rts/Arena.c
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
# The compile and preprocess commands are these functions: their text keys
# the caches (editing anything else in this script invalidates nothing).
flags_id=$(declare -f way_ghc_flags file_extra_cc cc_run pp_run norm_deps | sha256sum | cut -c1-16)

# ---------------------------------------------------------------------------
# Source: pristine rts/, includes/, mk/ways.mk and utils/fs (GHC's boot
# copies fs.c/fs.h into rts/; so do we).
# ---------------------------------------------------------------------------
t_start=$(date +%s)
if [ "$mode" = prefixes ] && [ -d "$work/pristine/rts" ]; then
    ghc_source=$work/pristine   # checked against the build's own source
elif [ -z "$ghc_source" ]; then
    fetch_debian_source "$out/cache/src" "$base"
    ghc_source=$out/cache/src/ghc_$base.orig.tar.xz
fi
case $ghc_source in /*) ;; *) ghc_source=$(pwd)/$ghc_source ;; esac
[ -e "$ghc_source" ] || die "--ghc-source $ghc_source does not exist"
# source_id SRC: what pristine.id records for a source tree or tarball.
source_id() {
    if [ -d "$1" ]; then
        echo "dir:$1:$(cat "$1"/rts/ghc.mk "$1/includes/Rts.h" | sha256sum | cut -c1-16)"
    else
        echo "tar:$(sha256sum <"$1" | cut -c1-64)"
    fi
}
if [ -d "$ghc_source" ]; then
    for f in rts/ghc.mk includes/Rts.h mk/ways.mk; do
        [ -f "$ghc_source/$f" ] || die "$ghc_source is not a GHC source tree (no $f)"
    done
fi
src_id=$(source_id "$ghc_source")
if [ "$mode" = prefixes ]; then
    :
elif [ "$(cat "$work/pristine.id" 2>/dev/null)" != "$src_id" ]; then
    say "extracting rts/, includes/, mk/ways.mk, utils/fs from $ghc_source"
    rm -rf "$work/pristine" "$work/pristine.new" "$work/pp-pristine" "$work/patched" "$work/patched.id"
    mkdir -p "$work/pristine.new"
    if [ -d "$ghc_source" ]; then
        for d in rts includes mk/ways.mk utils/fs; do
            [ -e "$ghc_source/$d" ] || continue
            mkdir -p "$work/pristine.new/$(dirname "$d")"
            cp -a "$ghc_source/$d" "$work/pristine.new/$d"
        done
    else
        top=$( (tar -tJf "$ghc_source" 2>/dev/null || true) | head -n 1 | cut -d/ -f1)
        tar -xJf "$ghc_source" -C "$work/pristine.new" --strip-components=1 \
            "$top/rts" "$top/includes" "$top/mk/ways.mk" "$top/utils/fs" \
            || die "cannot extract $ghc_source"
    fi
    [ -f "$work/pristine.new/rts/fs.c" ] || cp "$work/pristine.new/utils/fs/fs.c" "$work/pristine.new/rts/fs.c"
    [ -f "$work/pristine.new/rts/fs.h" ] || cp "$work/pristine.new/utils/fs/fs.h" "$work/pristine.new/rts/fs.h"
    mv "$work/pristine.new" "$work/pristine"
    echo "$src_id" >"$work/pristine.id"
fi

# ---------------------------------------------------------------------------
# Ways: every static RTS archive the installed GHC has.
# ---------------------------------------------------------------------------
ways=()
for a in "$libdir"/rts/libHSrts*.a; do
    [ -f "$a" ] || continue
    w=$(basename "$a" .a); w=${w#libHSrts}; w=${w#_}; [ -n "$w" ] || w=v
    ways+=("$w")
done
[ "${#ways[@]}" -gt 0 ] || die "no static RTS archive in $libdir/rts"
if [ -n "$only_ways" ]; then
    # Only the ways asked for; the others stay the stock archives.
    kept=()
    for w in ${only_ways//,/ }; do
        printf '%s\n' "${ways[@]}" | grep -qx -- "$w" \
            || die "--ways: no RTS archive for way '$w' (have: ${ways[*]})"
        kept+=("$w")
    done
    ways=("${kept[@]}")
fi
archive_of() { if [ "$1" = v ]; then echo "$libdir/rts/libHSrts.a"; else echo "$libdir/rts/libHSrts_$1.a"; fi; }
osuf_of() { if [ "$1" = v ]; then echo o; else echo "$1_o"; fi; }

# capture_argv SIDE WAY: record the gcc command ghc runs for an RTS C file
# (through a -pgmc wrapper), so that preprocessing can call gcc directly:
# a ghc start per file per way would dominate the run.
capture_argv() {
    local side=$1 way=$2 root wrapper cc file
    file=$work/flags/$side.$way.argv
    mkdir -p "$work/flags"
    # Cached: the command depends only on this script, ghc and the paths.
    local id="$flags_id $ghc $version $shadow"
    if [ -s "$file" ] && [ "$(cat "$file.id" 2>/dev/null)" = "$id" ]; then return 0; fi
    if [ "$side" = patched ]; then root=$ELS_RTS_PATCHED; else root=$ELS_RTS_PRISTINE; fi
    cc=$(info_field "C compiler command")
    wrapper=$work/flags/cc-capture
    # ghc passes the arguments in a response file (@FILE: one per line,
    # in double quotes, \\ and \" escaped); record them expanded.
    cat >"$wrapper" <<'EOF'
#!/usr/bin/env bash
args=()
for a in "$@"; do
    if [[ $a == @* && -f ${a#@} ]]; then
        mapfile -t more < <(sed -e 's/^"//' -e 's/"$//' -e 's/\\\(.\)/\1/g' "${a#@}")
        args+=("${more[@]}")
    else
        args+=("$a")
    fi
done
for a in "${args[@]}"; do
    if [ "$a" = -S ]; then printf '%s\0' "$ELS_CAPTURE_CC" "${args[@]}" >"$ELS_CAPTURE"; break; fi
done
exec "$ELS_CAPTURE_CC" "$@"
EOF
    chmod +x "$wrapper"
    rm -f "$file"
    # shellcheck disable=SC2046
    (cd "$root" && eval "set -- $(way_ghc_flags "$side" "$way")" &&
        ELS_CAPTURE=$file ELS_CAPTURE_CC=$cc "$ghc" "$@" -pgmc "$wrapper" "$ELS_RTS_PROBE" -o "$work/flags/probe.o") \
        >"$work/flags/capture.log" 2>&1 \
        || { cat "$work/flags/capture.log" >&2; die "ghc cannot compile $ELS_RTS_PROBE for way $way"; }
    [ -s "$file" ] || die "could not capture the C compiler command for way $way"
    echo "$id" >"$file.id"
}

# ---------------------------------------------------------------------------
# Members: map each archive member to its source.  GHC's build archives the
# C objects (rts/*.c, then hooks sm eventlog linker linker/macho posix, then
# the adjustor), then rts/*.S, then rts/*.cmm, then the generated
# AutoApply.cmm; a basename may occur twice (sm/Compact.c, Compact.cmm),
# the k-th occurrence is the k-th source in that order.
# ---------------------------------------------------------------------------
c_sources() {
    (cd "$1" && for d in rts rts/hooks rts/sm rts/eventlog rts/linker rts/linker/macho rts/posix rts/adjustor; do
        for f in "$d"/*.c; do [ -f "$f" ] && echo "$f"; done
    done | grep -vx 'rts/xxhash.c')
}
other_sources() {
    (cd "$1" && for f in rts/*.S rts/*.cmm; do [ -f "$f" ] && echo "$f"; done; echo "generated:AutoApply.cmm")
}

map_members() {   # map_members WAY > "member<TAB>occurrence<TAB>source"
    local way=$1 suf
    suf=$(osuf_of "$way")
    { c_sources "$work/pristine"; other_sources "$work/pristine"; } >"$work/sources.list"
    ar t "$(archive_of "$way")" | awk -v suf=".$suf" -v list="$work/sources.list" '
        BEGIN {
            while ((getline s < list) > 0) {
                b = s; sub(/^.*[\/:]/, "", b); sub(/\.[^.]*$/, "", b)
                n[b]++; cand[b, n[b]] = s
            }
        }
        {
            m = $0; b = m
            if (substr(b, length(b) - length(suf) + 1) != suf) { print m "\t1\tunknown:" m; next }
            b = substr(b, 1, length(b) - length(suf))
            seen[m]++
            s = ((b, seen[m]) in cand) ? cand[b, seen[m]] : "unknown:" m
            print m "\t" seen[m] "\t" s
        }'
}

# ---------------------------------------------------------------------------
# Self-check: compile unpatched files for every way, compare with stock.
# ---------------------------------------------------------------------------
extract_member() {   # extract_member ARCHIVE MEMBER OCCURRENCE DESTDIR
    mkdir -p "$4"
    (cd "$4" && if [ "$3" -gt 1 ]; then ar xN "$3" "$1" "$2"; else ar x "$1" "$2"; fi)
}

if [ "$mode" = self-check ]; then
    [ "${#self_check_files[@]}" -gt 0 ] || self_check_files=(rts/eventlog/EventLog.c rts/Trace.c
        rts/RtsUtils.c rts/RtsFlags.c rts/Schedule.c rts/Capability.c rts/Hash.c rts/sm/Evac_thr.c
        rts/sm/Compact.c rts/StgCRun.c rts/Ticky.c rts/posix/Signals.c rts/fs.c)
    sc=$work/self-check
    rm -rf "$sc"; mkdir -p "$sc"
    bad=0 total=0 same=0
    for w in "${ways[@]}"; do
        map_members "$w" >"$sc/map.$w"
        for f in "${self_check_files[@]}"; do
            case $f in rts/*) ;; *) f=rts/$f ;; esac
            line=$(awk -F'\t' -v s="$f" '$3 == s' "$sc/map.$w" | head -n 1)
            [ -n "$line" ] || { warn "$f is no member of the $w archive"; bad=1; continue; }
            m=$(cut -f1 <<<"$line"); k=$(cut -f2 <<<"$line")
            extract_member "$(archive_of "$w")" "$m" "$k" "$sc/stock.$w"
            total=$((total + 1))
            if ! cc_run pristine "$w" "$f" "$sc/$w/$f.o" >"$sc/log" 2>&1; then
                cat "$sc/log" >&2; echo "FAIL $w $f: does not compile"; bad=1; continue
            fi
            if cmp -s <(nm "$sc/$w/$f.o" 2>/dev/null | grep -v ' [Nn] ') <(nm "$sc/stock.$w/$m" 2>/dev/null | grep -v ' [Nn] '); then
                if cmp -s "$sc/$w/$f.o" "$sc/stock.$w/$m"; then
                    echo "ok   $w $f ($m): same symbols, identical object"; same=$((same + 1))
                elif cmp -s <(objdump -d "$sc/$w/$f.o" | tail -n +3) <(objdump -d "$sc/stock.$w/$m" | tail -n +3); then
                    echo "ok   $w $f ($m): same symbols, same code"
                else
                    echo "ok   $w $f ($m): same symbols (code differs)"
                fi
            else
                echo "DIFF $w $f ($m): symbol tables differ:"
                diff <(nm "$sc/$w/$f.o" 2>/dev/null | grep -v ' [Nn] ') <(nm "$sc/stock.$w/$m" 2>/dev/null | grep -v ' [Nn] ') | head -n 10 | sed 's/^/     /'
                bad=1
            fi
        done
    done
    say "self-check: $total objects compared, $same byte-identical, $([ $bad -eq 0 ] && echo 'all symbol tables match' || echo 'MISMATCHES')"
    exit "$bad"
fi

# ---------------------------------------------------------------------------
# The series: apply to a copy of the pristine tree.
# ---------------------------------------------------------------------------
patches=()
if [ -f "$series_dir/series" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        line=${line%%#*}; line=$(echo "$line" | tr -d '[:space:]')
        [ -n "$line" ] || continue
        [ -f "$series_dir/$line" ] || die "series names $line, which is not in $series_dir"
        patches+=("$line")
    done <"$series_dir/series"
else
    warn "$series_dir/series is missing: building the RTS with no patches"
fi

# apply_series TREE N: apply the first N patches to TREE (fails naming the
# patch that does not apply; no fuzz: a patch that needs fuzz is stale).
apply_series() {
    local tree=$1 n=$2 i=0 p log
    log=$(mktemp)
    for p in "${patches[@]}"; do
        [ "$i" -lt "$n" ] || break
        i=$((i + 1))
        if ! patch -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -d "$tree" \
                <"$series_dir/$p" >"$log" 2>&1; then
            sed 's/^/  /' "$log" >&2; rm -f "$log"
            die "patch $p does not apply to GHC $base (patch #$i in the series)"
        fi
    done
    rm -f "$log"
}

# changed_files A B: "M path" (differs), "A path" (only in B), "D path"
# (only in A), relative to the tree roots.
changed_files() {
    (diff -rq "$1" "$2" || true) | awk -v a="$1/" -v b="$2/" '
        /^Files / { p = $2; sub("^" a, "", p); print "M " p; next }
        /^Only in / {
            d = $3; sub(/:$/, "", d); n = $4
            if (index(d "/", b) == 1) { r = substr(d "/", length(b) + 1); print "A " r n }
            else { r = substr(d "/", length(a) + 1); print "D " r n }
        }' | while read -r k p; do
        if [ "$k" = A ] && [ -d "$2/$p" ]; then (cd "$2" && find "$p" -type f | sed 's/^/A /')
        else echo "$k $p"; fi
    done | sort -u
}

series_id=$( { echo "$base"; cat "$series_dir/series" 2>/dev/null || true; for p in "${patches[@]}"; do cat "$series_dir/$p"; done; } | sha256sum | cut -c1-64)

if [ "$mode" = prefixes ]; then
    # Each prefix of the series builds: the first k patches, as a series of
    # their own, go through this whole build (every way, the archives, the
    # shadow libdir) in one scratch output directory, and a program linked
    # with that prefix's ghc-eventlog-sink (-threaded -eventlog) runs and
    # writes an eventlog ($scratch/prefix-K.eventlog).  The scratch build
    # starts from this build's pristine tree and preprocessing (hard
    # links), and objects are shared by key (--object-cache, by default
    # $work/objects-by-key, kept between runs), so a file's text is
    # compiled once whichever prefixes, and later runs, share it.
    [ -n "$scratch" ] || die "--check-prefixes needs --scratch DIR"
    [ -d "$work/pristine/rts" ] && [ -d "$work/pp-pristine" ] \
        || die "run the build first (no pristine tree or preprocessing in $work)"
    n=${#patches[@]}
    [ "$n" -gt 0 ] || { say "the series is empty"; exit 0; }
    # The whole series is the prefix 1..n: when this build is of the same
    # series, that prefix was built (for every way) and is not redone.
    last=$n
    if [ "$(cat "$work/patched.id" 2>/dev/null)" = "$series_id" ] && [ -x "$out/bin/ghc-eventlog-sink" ]; then
        last=$((n - 1))
        say "prefix 1..$n is the series this build made ($out): not rebuilt"
    fi
    sout=$scratch/out
    cache=${obj_cache:-$work/objects-by-key}
    rm -rf "$sout"
    mkdir -p "$sout/work" "$cache"
    cp -al "$work/pristine" "$work/pp-pristine" "$sout/work/"
    source_id "$work/pristine" >"$sout/work/pristine.id"
    find "$work/obj" -name '*.o.key' 2>/dev/null | while read -r key; do
        ln -f "${key%.key}" "$cache/$(cat "$key").o" 2>/dev/null || true
    done
    printf '%s\n' 'import Debug.Trace (traceEventIO)' 'main :: IO ()' \
        'main = traceEventIO "prefix-check" >> putStrLn "prefix-check ran"' >"$scratch/Hello.hs"
    for k in $(seq 1 "$last"); do
        sd=$scratch/series-$k
        rm -rf "$sd"; mkdir -p "$sd"
        cp "$series_dir/BASE" "$sd/"
        printf '%s\n' "${patches[@]:0:$k}" >"$sd/series"
        for p in "${patches[@]:0:$k}"; do cp "$series_dir/$p" "$sd/"; done
        name=${patches[$((k - 1))]}
        "$self" --series "$sd" --out "$sout" --ghc-source "$work/pristine" --ghc "$ghc" \
            --jobs "$jobs" --object-cache "$cache" ${only_ways:+--ways "$only_ways"} \
            >"$scratch/prefix-$k.log" 2>&1 || {
            sed 's/^/  /' "$scratch/prefix-$k.log" | tail -n 30 >&2
            die "prefix 1..$k (up to $name) does not build"
        }
        built=$(sed -n 's/^build-patched-rts: patched RTS built: \([0-9]*\) object.*/\1/p' "$scratch/prefix-$k.log")
        rm -f "$scratch/hello" "$scratch/prefix-$k.eventlog"
        (cd "$scratch" && "$sout/bin/ghc-eventlog-sink" -v0 -threaded -eventlog -rtsopts \
            -outputdir hello-obj Hello.hs -o hello) >"$scratch/link-$k.log" 2>&1 || {
            sed 's/^/  /' "$scratch/link-$k.log" | tail -n 20 >&2
            die "prefix 1..$k (up to $name): a program does not link against it (thr_l)"
        }
        out_run=$("$scratch/hello" +RTS -l "-ol$scratch/prefix-$k.eventlog" -RTS 2>&1) \
            && [ "$out_run" = "prefix-check ran" ] && [ -s "$scratch/prefix-$k.eventlog" ] \
            || die "prefix 1..$k (up to $name): the linked program failed: $out_run"
        say "prefix 1..$k ($name): built for ${#ways[@]} ways (${built:-0} objects compiled), linked and ran (thr_l)"
    done
    exit 0
fi

if [ "$(cat "$work/patched.id" 2>/dev/null)" != "$series_id" ]; then
    say "applying ${#patches[@]} patch(es) from $series_dir"
    rm -rf "$work/patched" "$work/patched.new" "$work/pp-patched"
    cp -a "$work/pristine" "$work/patched.new"
    apply_series "$work/patched.new" "${#patches[@]}"
    mv "$work/patched.new" "$work/patched"
    echo "$series_id" >"$work/patched.id"
fi
changed_files "$work/pristine" "$work/patched" >"$work/changes"
while read -r k p; do
    case $p in
        rts/*|includes/*) ;;
        *) die "the series changes $p: only rts/ and includes/ are rebuilt" ;;
    esac
    [ "$k" != D ] || die "the series deletes $p: removing RTS files is not supported"
    case $p in
        rts/*.cmm|rts/*.S) die "the series changes $p: Cmm and assembly members are not rebuilt" ;;
    esac
done <"$work/changes"

# ---------------------------------------------------------------------------
# Shadow include dir: the installed headers (symlinks) with the series'
# new and changed public headers copied over them.
# ---------------------------------------------------------------------------
rm -rf "$shadow/include.new"
mkdir -p "$shadow/include.new"
cp -rs "$libdir/include/." "$shadow/include.new/"
while read -r k p; do
    case $p in includes/*) ;; *) continue ;; esac
    r=${p#includes/}
    if [ "$k" = M ]; then
        cmp -s "$work/pristine/$p" "$libdir/include/$r" \
            || die "the installed $libdir/include/$r is not the source's $p: cannot patch it"
        warn "the series changes the public header $p; the installed libraries (base, ...) were compiled against the stock one: see rts-patches/README"
    fi
    rm -f "$shadow/include.new/$r"
    mkdir -p "$(dirname "$shadow/include.new/$r")"
    cp "$work/patched/$p" "$shadow/include.new/$r"
done <"$work/changes"
rm -rf "$shadow/include"
mv "$shadow/include.new" "$shadow/include"

# Cmm and assembly members cannot be rebuilt here: stop if a header they
# include changes (dependencies under every define the RTS uses, as GHC's
# own dependency pass does).
awk '{ print $2 }' "$work/changes" >"$work/changes.paths"
if [ -s "$work/changes.paths" ]; then
    mkdir -p "$work/deps-other"
    while read -r s; do
        dfile=$work/deps-other/$(echo "$s" | tr '/:' '__').deps
        if [ ! -f "$dfile" ]; then
            if [ "$s" = generated:AutoApply.cmm ]; then
                printf '#include "Cmm.h"\n' >"$work/deps-other/autoapply.S"; in=$work/deps-other/autoapply.S
            else in=$s; fi
            (cd "$work/pristine" && gcc -x assembler-with-cpp -M -MF "$dfile.d" -MT x -DCMINUSMINUS \
                -DPROFILING -DTHREADED_RTS -DDEBUG -DTRACING -I"$libdir/include" -Irts "$in" >/dev/null 2>&1) || true
            if [ -f "$dfile.d" ]; then norm_deps "$work/pristine" "$libdir/include" "$dfile.d" >"$dfile"; rm -f "$dfile.d"
            else : >"$dfile"; fi
        fi
        hit=$(grep -Fx -f "$work/changes.paths" "$dfile" | head -n 1 || true)
        [ -z "$hit" ] || die "the series changes $hit, which $s includes: Cmm and assembly members are not rebuilt"
    done < <(other_sources "$work/pristine")
fi

# ---------------------------------------------------------------------------
# Per way: which members change, compile them, assemble the archive.
# ---------------------------------------------------------------------------
# affected_candidates PPDIR: sources whose pristine dependencies include a
# changed file or a file named like an added one (it could now be found
# first on the include path).
affected_candidates() {
    (cd "$1" && find rts -name '*.deps' -print0 | xargs -0 -r awk -v added="$added_base" -v chg="$work/changes.paths" '
        BEGIN {
            while ((getline l < chg) > 0) changed[l] = 1
            n = split(added, a, "\n"); for (i = 1; i <= n; i++) if (a[i] != "") base[a[i]] = 1
        }
        {
            b = $0; sub(/^.*\//, "", b)
            if (($0 in changed) || (b in base)) { s = FILENAME; sub(/\.deps$/, "", s); print s }
        }') | sort -u
}

added_c=$(awk '$1 == "A" && $2 ~ /^rts\/([^\/]+|(hooks|sm|eventlog|linker|linker\/macho|posix)\/[^\/]+)\.c$/ { print $2 }' "$work/changes")
added_base=$(awk '$1 == "A" { n = $2; sub(/^.*\//, "", n); print n }' "$work/changes" | sort -u)
report=$out/build-report.txt
: >"$report.new"
recompiled_total=0 archives_rebuilt=0
mkdir -p "$shadow/rts.new"

for w in "${ways[@]}"; do
    suf=$(osuf_of "$w")
    map_members "$w" >"$work/members.$w"
    awk -F'\t' '$3 ~ /^unknown:/ { print $1 }' "$work/members.$w" | grep -vx "AutoApply.$suf" \
        | sed "s/^/$prog: note: way $w: archive member without a known source: /" >&2 || true
    # Basename clashes (one member name, several sources) are mapped by
    # order; list them in the report.
    awk -F'\t' '{ n[$1]++; s[$1] = s[$1] " " $3 } END { for (m in n) if (n[m] > 1) print m ":" s[m] }' \
        "$work/members.$w" | sort | sed "s/^/way $w: member name clash: /" >>"$report.new"
    # Pristine preprocessing (cached until the source or the flags change).
    if [ "$(cat "$work/pp-pristine/$w.id" 2>/dev/null)" != "$flags_id" ]; then
        rm -rf "$work/pp-pristine/$w"
        capture_argv pristine "$w"
        mkdir -p "$work/pp-pristine/$w"
        awk -F'\t' '$3 ~ /\.c$/ { print $3 }' "$work/members.$w" | sort -u \
            | xargs -r -P "$jobs" -n 1 "$self" --_pp pristine "$w" \
            || die "preprocessing the pristine sources failed (way $w)"
        echo "$flags_id" >"$work/pp-pristine/$w.id"
    fi
    # Candidates: files whose pristine dependencies include a changed file,
    # or a file named like an added one (it could now be found first).
    capture_argv patched "$w"
    cands=$(affected_candidates "$work/pp-pristine/$w")
    # Preprocess the candidates and the added files on the patched side.
    rm -rf "$work/pp-patched/$w"
    mkdir -p "$work/pp-patched/$w"
    # shellcheck disable=SC2086
    printf '%s\n' $cands $added_c | sed '/^$/d' | xargs -r -P "$jobs" -n 1 "$self" --_pp patched "$w" \
        || die "preprocessing the patched sources failed (way $w)"
    replaced=() added=() todo=()
    for s in $cands; do
        if [ "$(cat "$work/pp-patched/$w/$s.hash")" != "$(cat "$work/pp-pristine/$w/$s.hash")" ]; then
            replaced+=("$s")
        fi
    done
    for s in $added_c; do added+=("$s"); done
    # Objects: rebuilt when the patched text or the flags changed.
    for s in "${replaced[@]}" "${added[@]}"; do
        [ -n "$s" ] || continue
        key=$(cat "$work/pp-patched/$w/$s.i" <(echo "$flags_id $version $s $w") | sha256sum | cut -c1-64)
        obj=$work/obj/$w/$s.o
        if [ -f "$obj" ] && [ "$(cat "$obj.key" 2>/dev/null)" = "$key" ]; then continue; fi
        if [ -n "$obj_cache" ] && [ -f "$obj_cache/$key.o" ]; then
            mkdir -p "$(dirname "$obj")"
            rm -f "$obj"; cp "$obj_cache/$key.o" "$obj"; echo "$key" >"$obj.key"
            continue
        fi
        todo+=("$s $obj $key")
    done
    if [ "${#todo[@]}" -gt 0 ]; then
        printf '%s\n' "${todo[@]}" | xargs -r -P "$jobs" -L 1 "$self" --_cc patched "$w" \
            || die "compiling the patched RTS failed (way $w)"
        recompiled_total=$((recompiled_total + ${#todo[@]}))
        if [ -n "$obj_cache" ]; then
            for t in "${todo[@]}"; do
                read -r _ o k <<<"$t"
                ln -f "$o" "$obj_cache/$k.o" 2>/dev/null || cp "$o" "$obj_cache/$k.o"
            done
        fi
    fi
    # Assemble libHSrts_<way>.a if a member changed.
    stock=$(archive_of "$w")
    lib=$(basename "$stock")
    names() { for s in "$@"; do [ -n "$s" ] && printf '%s ' "${s#rts/}"; done; }
    echo "way $w: replaced ${#replaced[@]}: $(names "${replaced[@]}")" >>"$report.new"
    echo "way $w: added ${#added[@]}: $(names "${added[@]}")" >>"$report.new"
    echo "way $w: recompiled this run ${#todo[@]}: $(for t in "${todo[@]}"; do printf '%s ' "${t%% *}"; done)" >>"$report.new"
    if [ "${#replaced[@]}" -eq 0 ] && [ "${#added[@]}" -eq 0 ]; then
        ln -sfn "$stock" "$shadow/rts.new/$lib"
        continue
    fi
    akey=$( { stat -c '%s %Y' "$stock"; for s in "${replaced[@]}" "${added[@]}"; do echo "$s $(cat "$work/obj/$w/$s.o.key")"; done; } | sha256sum | cut -c1-64)
    if [ -f "$work/ar/$lib" ] && [ "$(cat "$work/ar/$lib.key" 2>/dev/null)" = "$akey" ]; then
        ln -f "$work/ar/$lib" "$shadow/rts.new/$lib" 2>/dev/null || cp -p "$work/ar/$lib" "$shadow/rts.new/$lib"
        continue
    fi
    say "assembling $lib (way $w: ${#replaced[@]} replaced, ${#added[@]} added)"
    t=$work/ar/$w.tmp
    rm -rf "$t"; mkdir -p "$t/m"
    (cd "$t/m" && ar x "$stock")      # unique names; duplicates below
    members=()
    declare -A repl=() dup=()
    for s in "${replaced[@]}"; do [ -n "$s" ] && repl[$s]=1; done
    while read -r m; do dup[$m]=1; done < <(cut -f1 "$work/members.$w" | sort | uniq -d)
    i=0
    while IFS=$'\t' read -r m k s; do
        i=$((i + 1))
        if [ -n "${repl[$s]:-}" ]; then
            cp "$work/obj/$w/$s.o" "$t/m/$i.$m"
        elif [ "$k" -gt 1 ] || [ -n "${dup[$m]:-}" ]; then
            mkdir -p "$t/d$i"; (cd "$t/d$i" && ar xN "$k" "$stock" "$m"); mv "$t/d$i/$m" "$t/m/$i.$m"
        else
            mv "$t/m/$m" "$t/m/$i.$m"
        fi
        members+=("$i.$m")
    done <"$work/members.$w"
    unset repl dup
    for s in "${added[@]}"; do
        [ -n "$s" ] || continue
        m=$(basename "$s" .c).$suf
        grep -Fxq "$m" <(cut -f1 "$work/members.$w") && die "the added $s would be archive member $m, which exists already"
        i=$((i + 1)); cp "$work/obj/$w/$s.o" "$t/m/$i.$m"; members+=("$i.$m")
    done
    # ar names members by file name: stage each under its member name in
    # its own directory, append in order.
    mkdir -p "$t/out"
    staged=()
    for e in "${members[@]}"; do
        m=${e#*.}; mkdir -p "$t/s/$e"; mv "$t/m/$e" "$t/s/$e/$m"; staged+=("$t/s/$e/$m")
    done
    ar qcD "$t/out/$lib" "${staged[@]}"
    ranlib -D "$t/out/$lib"
    mkdir -p "$work/ar"
    mv "$t/out/$lib" "$work/ar/$lib"; echo "$akey" >"$work/ar/$lib.key"
    rm -rf "$t"
    ln -f "$work/ar/$lib" "$shadow/rts.new/$lib" 2>/dev/null || cp -p "$work/ar/$lib" "$shadow/rts.new/$lib"
    archives_rebuilt=$((archives_rebuilt + 1))
done

# The rest of rts/ (shared libraries, anything else) as symlinks.
for e in "$libdir"/rts/*; do
    n=$(basename "$e")
    [ -e "$shadow/rts.new/$n" ] || [ -L "$shadow/rts.new/$n" ] || ln -s "$e" "$shadow/rts.new/$n"
done
rm -rf "$shadow/rts"
mv "$shadow/rts.new" "$shadow/rts"

# ---------------------------------------------------------------------------
# Shadow libdir: symlinks to everything else, our package db.
# ---------------------------------------------------------------------------
for e in "$libdir"/* ; do
    n=$(basename "$e")
    case $n in rts|include|package.conf.d) continue ;; esac
    if [ "$(readlink "$shadow/$n" 2>/dev/null)" != "$e" ]; then rm -rf "${shadow:?}/$n"; ln -s "$e" "$shadow/$n"; fi
done
for e in "$shadow"/*; do   # entries the installed libdir lost
    n=$(basename "$e")
    case $n in rts|include|package.conf.d) continue ;; esac
    [ -e "$libdir/$n" ] || rm -f "$e"
done
db=$(readlink -f "$libdir/package.conf.d")
rm -rf "$shadow/package.conf.d.new"; mkdir -p "$shadow/package.conf.d.new"
cp "$db"/*.conf "$shadow/package.conf.d.new/"
rtsconf=$shadow/package.conf.d.new/rts.conf
[ -f "$rtsconf" ] || die "no rts.conf in $db"
awk -v lib="$shadow/rts" -v inc="$shadow/include" -v old="$libdir" '
    /^[a-z-]+:/ { field = $1 }
    (field == "library-dirs:" || field == "include-dirs:") {
        gsub(old "/rts", lib); gsub(old "/include", inc)
    }
    { print }' "$rtsconf" >"$rtsconf.tmp" && mv "$rtsconf.tmp" "$rtsconf"
grep -q "$shadow/rts" "$rtsconf" || die "could not point rts.conf's library-dirs at $shadow/rts"
if ! diff -rq -x package.cache -x package.cache.lock "$shadow/package.conf.d.new" "$shadow/package.conf.d" >/dev/null 2>&1; then
    "$ghcpkg" --global-package-db="$shadow/package.conf.d.new" recache \
        || die "ghc-pkg recache of the shadow package db failed"
    rm -rf "$shadow/package.conf.d"; mv "$shadow/package.conf.d.new" "$shadow/package.conf.d"
else
    rm -rf "$shadow/package.conf.d.new"
fi
echo "$base" >"$shadow/.base"

mkdir -p "$out/bin"
cat >"$out/bin/ghc-eventlog-sink.new" <<EOF
#!/bin/sh
# ghc-eventlog-sink: GHC $base linking programs against the eventlog-sink
# patched RTS (static ways only; -dynamic uses the stock RTS).
exec "$realghc" -B"$shadow" \${1+"\$@"}
EOF
chmod 755 "$out/bin/ghc-eventlog-sink.new"
mv "$out/bin/ghc-eventlog-sink.new" "$out/bin/ghc-eventlog-sink"
mv "$report.new" "$report"

t_end=$(date +%s)
if [ "$recompiled_total" -eq 0 ] && [ "$archives_rebuilt" -eq 0 ]; then
    say "patched RTS up to date, nothing recompiled ($((t_end - t_start)) s): $out/bin/ghc-eventlog-sink"
else
    say "patched RTS built: $recompiled_total object(s) compiled, $archives_rebuilt archive(s) assembled in $((t_end - t_start)) s"
    sed "s/^/  /" "$report"
    say "use $out/bin/ghc-eventlog-sink"
fi
