#!/usr/bin/env bash
# make bench: every tests/bench/*.sh but this one, each printing its figures
# next to its peer's.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
for b in tests/bench/*.sh; do
	[ "$(basename "$b")" = run.sh ] && continue
	bash "$b" || { echo "bench $(basename "$b") failed"; rc=1; }
done
exit $rc
