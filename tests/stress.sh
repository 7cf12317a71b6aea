#!/usr/bin/env bash
# The whole test suite on ONE core that a busy loop also wants: a slow, loaded machine.
#
#   bash tests/stress.sh            # extra arguments go to pytest, e.g. -x or -k distributed
#
# Every test must pass here as it does on a fast, quiet machine: tests assert counts and events,
# never how fast something ran. Child processes (actors, Ray workers) inherit the pinning.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v taskset >/dev/null || { echo "stress.sh needs taskset (util-linux)" >&2; exit 2; }
taskset -c 0 bash -c 'while :; do :; done' &
hog=$!
trap 'kill "$hog" 2>/dev/null || true' EXIT
echo "stress: pytest pinned to core 0, busy loop (pid $hog) on the same core"
taskset -c 0 python3 -m pytest -q -p no:cacheprovider -n 0 "$@"
