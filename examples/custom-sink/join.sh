#!/usr/bin/env bash
# join.sh: join files of one stream written by the rotate: sink back into
# that stream, for tools that follow thread and task state across the
# whole run (ThreadScope, `ghc-events validate threads`).
#
# Usage: examples/custom-sink/join.sh FILE... > joined.eventlog
#
# FILEs in order (app.000003.eventlog app.000004.eventlog ...), all of one
# stream (a stream ends with the file that ends with DATA_END; a restart of
# the eventlog begins the next one).  Each file starts with the stream's
# header: the first file is copied whole, the header is cut from the
# others, which must start with the same bytes.  Not its job: finding the
# files, or a stream whose older files keep= removed (joined, it still
# starts mid-run).
set -euo pipefail

die() { echo "join.sh: $*" >&2; exit 1; }

[ "$#" -gt 0 ] || die "usage: join.sh FILE... > joined.eventlog"
[ ! -t 1 ] || die "refusing to write a binary stream to a terminal"

first=$1
[ "$(head -c 4 "$first")" = hdrb ] || die "$first does not start with an eventlog header"
# The header ends with the "datb" marker (the start of the data section).
# No pipefail here: head and grep may stop their writers early.
off=$(set +o pipefail; head -c 1048576 "$first" | grep -obUaF datb | head -n 1 | cut -d: -f1)
[ -n "$off" ] || die "$first holds no whole header"
header=$((off + 4))

cat "$first"
shift
for f in "$@"; do
    cmp -s -n "$header" "$first" "$f" || die "$f does not start with the header of $first"
    tail -c +$((header + 1)) "$f"
done
