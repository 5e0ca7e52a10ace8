#!/usr/bin/env bash
# Runs the benchmark harness (bench/): installs what it needs first (as
# test.sh does), then measures every section side by side in one run and
# prints the Markdown report on stdout; progress goes to stderr and a copy
# of the report to .cache/bench/latest.md. Arguments go to the harness, e.g.
#   scripts/bench.sh -sections context,task -reps 1
# Stop the dockerd that testdeps.sh starts (if it starts one), however this ends.
trap '[ "${DOCKERD_STARTED:-0}" = 1 ] && stop_dockerd' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Setup talks on stderr only: stdout is the report.
exec 3>&1 1>&2
source "$(dirname "${BASH_SOURCE[0]}")/testdeps.sh"
# The harness does not use the Kubernetes test cluster, whose daemons would
# compete with it for the CPU: stopped (the next testdeps.sh starts it in
# seconds).
stop_kube
exec 1>&3 3>&-
cd "$ROOT"
mkdir -p .cache/bench
command="make bench"
if [ $# -gt 0 ]; then command="scripts/bench.sh $*"; fi
log "go run ./bench"
go run ./bench -out .cache/bench/latest.md -command "$command" "$@"
