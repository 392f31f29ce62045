#!/usr/bin/env bash
# Benchmark: zones (zone/) on the host's cgroup2, driven by build/zone-driver
# (the zone library in its own loop, as a parent kin). Figures, not
# pass/fail, next to a peer measured in the same run:
#   - zone create -> nested kin RPC-ready (Health/Version answered over the
#     socketpair), median over RUNS; then stop -> gone and cleaned up
#   - peer: unshare --pid --mount --uts --ipc --cgroup --fork + exec of the
#     same kin (from disk) as container init, answering Version on fd 3:
#     the raw namespace cost, without cell, sealed copy, root or pivot
#   - memory of an idle zone kin (smaps_rollup: RSS, PSS, private dirty)
#     next to the peer's; the cell's memory.current where the memory
#     controller exists (not on this host's hybrid cgroups: n/a)
#   - SIBLINGS zones made one after the other, then stopped one after the
#     other: totals, and the per-zone cost at 1-10, 11-50, 51-100
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/common.sh
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
DRIVER=$PWD/$BUILD/zone-driver
RUNS=${BENCH_ZONES_RUNS:-200}
SIBLINGS=${BENCH_ZONES_SIBLINGS:-100}
[ -x "$DRIVER" ] || { echo "== zones: skipped (no $DRIVER; make $DRIVER)"; exit 0; }
CG=$(cgroup2_mount)
[ -n "$CG" ] || { echo "== zones: skipped (no cgroup2 mount)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-zones.XXXXXX)
TOP=kin-zbench-$$
mkdir -p "$CG/$TOP"
trap 'find "$CG/$TOP" -depth -type d -exec rmdir {} \; 2>/dev/null; rm -rf "$T"' EXIT

sync # a freshly built kin's dirty page-cache pages would count as private dirty
# Interleaved halves, so drift on this shared machine hits zone and peer alike.
half=$((RUNS / 2))
printf '%s\n' "bench-ready $half" "bench-peer $half $KIN" "bench-ready $half" "bench-peer $half $KIN" \
	"bench-peer-mem $KIN" "bench-siblings $SIBLINGS" |
	timeout 900 "$DRIVER" --base "$TOP" --self "$KIN" --state-dir "$T/state" >"$T/out" 2>&1 || true
grep '^RESULT\|^error' "$T/out" >"$T/results" || true

ms() { awk -v v="$1" 'BEGIN{printf "%.2f", v/1000}'; }
# med WHAT: median (us) of the two rounds' medians, by name
pick() { grep "^RESULT $1 " "$T/results" | sed -E 's/.*median_us ([0-9.]+) p90_us ([0-9.]+).*/\1 \2/'; }
printf '== zones: create -> nested kin RPC-ready, host cgroup2, %d runs each (two interleaved rounds)\n' "$RUNS"
row() { # row KEY LABEL
	local r
	r=$(pick "$1" | tr '\n' ' ')
	if [ -z "$r" ]; then
		printf '  %-56s failed: %s\n' "$2" "$(grep '^error' "$T/results" | head -1)"
		return
	fi
	set -- $r "$2"
	printf '  %-56s round 1 median %6s ms p90 %6s ms; round 2 median %6s ms p90 %6s ms\n' \
		"${!#}" "$(ms "$1")" "$(ms "$2")" "$(ms "${3:-0}")" "$(ms "${4:-0}")"
}
row ready "zone: create -> Version answered"
row peer "peer: unshare pid+mnt+uts+ipc+cgroup, kin init --rpc-fd"
row stop "zone: stop -> gone, cell and mounts removed"
zr=$(pick ready | awk '{print $1}' | sort -n | head -1) pr=$(pick peer | awk '{print $1}' | sort -n | head -1)
[ -n "$zr" ] && [ -n "$pr" ] && printf '  %-56s %.2f\n' "ratio zone / peer (best round medians)" \
	"$(awk -v z="$zr" -v p="$pr" 'BEGIN{print z/p}')"

echo "== zones: idle kin memory (smaps_rollup, KiB; text is the shared sealed memfd)"
m=$(grep '^RESULT mem ' "$T/results" || true)
pm=$(grep '^RESULT peermem ' "$T/results" || true)
f() { echo "$1" | sed -E "s/.* $2 ([-0-9]+).*/\\1/"; }
[ -n "$m" ] && printf '  %-40s RSS %5s  PSS %5s  private dirty %4s   (mean of %s zone kins)\n' "zone kin" \
	"$(f "$m" rss_kib)" "$(f "$m" pss_kib)" "$(f "$m" private_dirty_kib)" "$(f "$m" zones)"
[ -n "$pm" ] && printf '  %-40s RSS %5s  PSS %5s  private dirty %4s\n' "peer: kin as container init" \
	"$(f "$pm" rss_kib)" "$(f "$pm" pss_kib)" "$(f "$pm" private_dirty_kib)"
[ -n "$m" ] && printf '  %-40s %5s KiB per zone (host-wide, noisy)\n' "MemAvailable drop" "$(f "$m" memavail_drop_kib)"
mc=$(grep '^RESULT memcg ' "$T/results" || true)
if [ -n "$mc" ]; then
	printf '  %-40s %5s KiB per zone\n' "zone cell memory.current" "$(f "$mc" memory_current_kib)"
else
	printf '  %-40s n/a (no memory controller in this cgroup2: hybrid host)\n' "zone cell memory.current"
fi

s=$(grep '^RESULT siblings ' "$T/results" || true)
printf '== zones: %s sibling zones made one after the other, then stopped one after the other\n' "$SIBLINGS"
if [ -z "$s" ]; then
	echo "  failed: $(grep '^error' "$T/results" | head -1)"
	exit 1
fi
printf '  made %s: create total %s ms, delete total %s ms\n' "$(f "$s" made)" \
	"$(echo "$s" | sed -E 's/.*create_total_ms ([0-9.]+).*/\1/')" "$(echo "$s" | sed -E 's/.*delete_total_ms ([0-9.]+).*/\1/')"
grep '^RESULT band ' "$T/results" | while read -r _ _ band what _ n _ med _ p90 _; do
	printf '  zones %-7s %-6s per zone median %6s ms  p90 %6s ms  (n %s)\n' "$band" "$what" "$(ms "$med")" "$(ms "$p90")" "$n"
done

# Through the RPC API: a root kin daemon, `kin ctl zone create` (answered
# once the nested kin answers Health/Check through its route) and `kin ctl
# zone stop` (answered once gone and cleaned up), each a whole kin ctl
# process, next to `kin ctl health` (the client's own cost).
CTL_RUNS=${BENCH_ZONES_CTL_RUNS:-50}
mkdir -p "$CG/$TOP/ctl"
S=$T/ctl.sock
sh -c "echo \$\$ >'$CG/$TOP/ctl/cgroup.procs' && exec '$KIN' init --log-level warn --grace 2s --socket '$S' --zone-dir '$T/zones'" \
	>"$T/ctl.log" 2>&1 &
CTLD=$!
for _ in $(seq 200); do [ -S "$S" ] && break; sleep 0.02; done
now() { date +%s%N; }
: >"$T/c" && : >"$T/s" && : >"$T/h"
for i in $(seq "$CTL_RUNS"); do
	t0=$(now); "$KIN" ctl --socket "$S" health >/dev/null 2>&1 || true; t1=$(now)
	"$KIN" ctl --socket "$S" zone create "b$i" >/dev/null 2>&1 || { echo "error zone create b$i" >>"$T/c.err"; break; }
	t2=$(now)
	"$KIN" ctl --socket "$S" zone stop "b$i" >/dev/null 2>&1 || true
	t3=$(now)
	echo $(((t1 - t0) / 1000)) >>"$T/h"; echo $(((t2 - t1) / 1000)) >>"$T/c"; echo $(((t3 - t2) / 1000)) >>"$T/s"
done
"$KIN" ctl --socket "$S" poweroff >/dev/null 2>&1 || kill "$CTLD" 2>/dev/null
wait "$CTLD" 2>/dev/null || true
stat() { sort -n "$1" | awk '{v[NR]=$1} END{if (NR) printf "median %6.2f ms p90 %6.2f ms (n %d)", v[int((NR+1)/2)]/1000, v[int(NR*0.9+0.5)]/1000, NR}'; }
printf '== zones: through RPC (a kin init daemon, one kin ctl process per call), %d runs\n' "$CTL_RUNS"
if [ -s "$T/c.err" ] || [ ! -s "$T/c" ]; then
	echo "  failed: $(cat "$T/c.err" 2>/dev/null) $(tail -3 "$T/ctl.log")"
else
	printf '  %-56s %s\n' "kin ctl zone create -> nested kin RPC-ready" "$(stat "$T/c")"
	printf '  %-56s %s\n' "kin ctl zone stop -> gone and cleaned up" "$(stat "$T/s")"
	printf '  %-56s %s\n' "peer: kin ctl health (client process + one call)" "$(stat "$T/h")"
fi
