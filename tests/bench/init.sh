#!/usr/bin/env bash
# Benchmark: kin as PID 1 of fresh PID+mount namespaces next to tini doing
# the same job, in one run. Figures, not pass/fail.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
B=$BUILD/bench-nsinit KIN=$BUILD/kin HELPER=$PWD/$BUILD/ns-helper
TINI=$(command -v tini || true)
RUNS=${BENCH_RUNS:-300}

echo "== init: exec of PID 1 -> first workload instruction, fresh pid+mnt namespaces ($RUNS runs each)"
# Interleave the two so drift on this shared machine hits both alike.
for round in 1 2; do
	printf '  kin  (round %d)  %s\n' $round "$($B start $((RUNS / 2)) "$HELPER" "$KIN" init --)"
	[ -n "$TINI" ] && printf '  tini (round %d)  %s\n' $round "$($B start $((RUNS / 2)) "$HELPER" "$TINI" --)"
done
sync # a freshly built binary still has dirty page-cache pages, counted as private dirty
echo "== init: idle memory of PID 1 supervising 'sleep 60'"
printf '  kin (static)          %s   text %s KiB\n' "$($B rss "$KIN" init --)" "$(( $(size -A "$KIN" | awk '$1==".text"{print $2}') / 1024 ))"
[ -n "$TINI" ] && printf '  tini (dynamic)        %s\n' "$($B rss "$TINI" --)"
[ -x /usr/bin/tini-static ] && printf '  tini-static           %s   text %s KiB\n' "$($B rss /usr/bin/tini-static --)" "$(( $(size -A /usr/bin/tini-static | awk '$1==".text"{print $2}') / 1024 ))"
