#!/usr/bin/env bash
# Side by side with the VALP reference kernel (issue 20; not run in CI): whole-process
# `valp verify` of an imported reference journal against the reference kernel's replay of the
# same journal, run alternately, CPU time (user + sys) and wall time of each run.
#
# Usage: tests/perf/reference_side_by_side.sh VALP REFERENCE_CHECKOUT [ENTRIES] [WORK_ITEMS] [RUNS]
#   VALP                a release `valp` binary (cargo build --release -p valp-console --bin valp)
#   REFERENCE_CHECKOUT  the public VALP repository at commit
#                       57d06a771a6c564a4517686a26c63570195a7373 (holds valp_cli/protocol_kernel.py;
#                       see tests/fixtures/conformance/PROVENANCE.md); nothing of it is copied here
#   ENTRIES, WORK_ITEMS the journal (default 1000 entries over 20 work items, ~157 MB exported)
#   RUNS                alternating runs of each (default 3)
#   VALP_RUNS           (environment) each `valp verify` figure is the mean of this many runs by
#                       `perf stat` (default 20; one run by /usr/bin/time without perf): a verify
#                       of 1,000 entries takes ~10 ms, /usr/bin/time resolves 10 ms
#
# Steps: `valp demo` writes the task, `valp export --reference` writes the reference layout
# (genesis.json + replay.jsonl), a second root of the same installation imports it (timed), and
# then each run times `valp verify` on that root and tests/perf/reference_replay.py (the
# reference's `replay` over the same replay.jsonl). The ratio is reference / valp, per pair.
set -euo pipefail

valp=$(realpath "$1")
reference=$(realpath "$2")
entries=${3:-1000}
work_items=${4:-20}
runs=${5:-3}
here=$(dirname "$(realpath "$0")")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpu() { # prints "<cpu seconds> <wall seconds>" of the command
    local out
    out=$( { /usr/bin/time -f '%U %S %e' "$@" >/dev/null 2>"$work/err"; } 2>&1 ) || {
        cat "$work/err" >&2
        return 1
    }
    tail -n 1 "$work/err" | awk '{ printf "%.3f %.3f\n", $1 + $2, $3 }'
}

repeat=${VALP_RUNS:-20}
verify_cpu() { # prints "<cpu seconds> <wall seconds>" of `valp verify`, the mean of $repeat runs
    cpu "$valp" verify --no-default-sockets >/dev/null || return 1 # a failing verify stops here
    # perf's own figures: task-clock, and "time elapsed", each run's wall from fork to exit (a
    # clock around all of `perf stat` would add a share of perf's own start and end to each).
    local report task elapsed
    report=$(LC_ALL=C perf stat -e task-clock -r "$repeat" "$valp" verify --no-default-sockets \
        2>&1 >/dev/null) || report=
    task=$(awk '/task-clock/ { print $1 }' <<<"$report")
    elapsed=$(awk '/seconds time elapsed/ { print $1 }' <<<"$report")
    if [ -z "$task" ] || [ -z "$elapsed" ]; then # no perf, or not allowed: one run by /usr/bin/time
        cpu "$valp" verify --no-default-sockets
        return
    fi
    echo "$task $elapsed" | awk '{ printf "%.4f %.4f\n", $1 / 1000, $2 }'
}

(cd "$work" && mkdir source && cd source &&
    "$valp" demo --entries "$entries" --work-items "$work_items" --no-default-sockets >/dev/null &&
    "$valp" export --reference demo-1 "$work/export" >/dev/null)
installation=$(sed -n 's/.*"installation_id":{"kind":"installation","value":"\([^"]*\)".*/\1/p' \
    "$work/export/runtime/kernel/genesis.json")
mkdir "$work/imported"
(cd "$work/imported" && "$valp" init --installation-id "$installation" >/dev/null)
echo "journal: $entries entries, $work_items work items," \
    "replay.jsonl $(stat -c %s "$work/export/runtime/kernel/replay.jsonl") bytes"
echo "import (cpu wall, s): $(cd "$work/imported" && cpu "$valp" import "$work/export")"

for run in $(seq 1 "$runs"); do
    ours=$(cd "$work/imported" && verify_cpu)
    theirs=$(cpu python3 "$here/reference_replay.py" "$reference" "$work/export/runtime/kernel")
    echo "run $run: valp verify (cpu wall, s) $ours; reference replay $theirs;" \
        "ratio cpu $(echo "$ours $theirs" | awk '{ printf "%.0f", $3 / $1 }')x," \
        "wall $(echo "$ours $theirs" | awk '{ printf "%.0f", $4 / $2 }')x"
done
