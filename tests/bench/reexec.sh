#!/usr/bin/env bash
# Benchmark: re-exec in place (`kin ctl reexec`) of a loaded daemon kin on
# the host's cgroup2 — EXECS executables (sleep, in 10 cells), ZONES zones
# (each a zone kin on the parent's root) and 64 clients calling
# Health/Check — ROUNDS times. Figures, next to the same
# kin's cold start on the same machine:
#   - the time kin does not answer RPC, as a client calling in a loop sees
#     it (build/rpc-gap: the largest gaps between two answers), median and
#     max over ROUNDS re-execs
#   - kin's own figures: from its last answer to ready again, the state's
#     size, the new kin from exec to "ready again", the restore alone
#   - cold: a kin started afresh, exec to "ready" (its log line)
#   - adoption: the daemon killed with SIGKILL and started again on its
#     state directory: exec to "ready" with everything adopted, and how
#     many executables still run and zones answer again
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/common.sh
BUILD=${BUILD:-build}
KIN=$PWD/$BUILD/kin
GAP=$PWD/$BUILD/rpc-gap
EXECS=${BENCH_REEXEC_EXECS:-1000}
ROUNDS=${BENCH_REEXEC_ROUNDS:-20}
ZONES=${BENCH_REEXEC_ZONES:-100}
[ -x "$GAP" ] || { echo "== reexec: skipped (no $GAP; make $GAP)"; exit 0; }
CG=$(cgroup2_mount)
[ -n "$CG" ] || { echo "== reexec: skipped (no cgroup2 mount)"; exit 0; }
T=$(mktemp -d /tmp/kin-bench-reexec.XXXXXX)
TOP=kin-rxbench-$$
BASE=$CG/$TOP/d
DPID=
cleanup() {
	[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null
	sleep 0.5
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT
trap "exit 1" INT TERM PIPE
S=$T/k.sock
mkdir -p "$BASE"
start_kin() {
	sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec '$KIN' init --grace 1s --socket '$S' --state-dir '$T/state' --zone-dir '$T/zones'" >"$1" 2>&1 &
	DPID=$!
}
start_kin "$T/kin.log"
wait_for "grep -q 'ready:' '$T/kin.log'" 500
cold=$(sed -n 's/.*ready: .*, \([0-9.]*\) ms after exec.*/\1/p' "$T/kin.log" | head -1)
kc() { "$KIN" ctl --socket "$S" "$@" >/dev/null; }
for c in $(seq 0 9); do kc cell create c$c; done
for i in $(seq 1 "$EXECS"); do
	kc exec start c$((i % 10)) e$i -- sleep 100000
done
for z in $(seq 1 "$ZONES"); do
	kc zone create z$z || echo "    zone z$z failed"
done
sleep 1
# 64 clients calling all along, each connecting again after a re-exec:
# one reports its gaps, 63 are the load.
secs=$((ROUNDS / 2 + 6))
"$GAP" "$S" "$secs" >"$T/gaps" &
GPID=$!
LPIDS=
for _ in $(seq 63); do
	"$GAP" "$S" "$secs" >/dev/null &
	LPIDS="$LPIDS $!"
done
sleep 2
for _ in $(seq 1 "$ROUNDS"); do
	kc reexec || echo "    reexec failed"
	sleep 0.4
done
wait "$GPID" $LPIDS
running=$("$KIN" ctl --socket "$S" exec list | grep -c ' running ' || true)
zones=$("$KIN" ctl --socket "$S" zone list | grep -c ' running .* ready$' || true)
top=$(head -n "$ROUNDS" "$T/gaps" | sort -n)
median=$(echo "$top" | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}')
max=$(echo "$top" | tail -1)
again=$(sed -n 's/.*ready again: .*, \([0-9.]*\) ms after exec.*/\1/p' "$T/kin.log" | sort -n |
	awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}')
restore=$(sed -n 's/.*state taken over in \([0-9.]*\) ms.*/\1/p' "$T/kin.log" | sort -n |
	awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}')
silent=$(sed -n 's/.*, \([0-9.]*\) ms without answering.*/\1/p' "$T/kin.log" | sort -n |
	awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}')
bytes=$(sed -n 's/.*state of \([0-9]*\) bytes.*/\1/p' "$T/kin.log" | tail -1)
written=$(sed -n 's/.*state of [0-9]* bytes written in \([0-9.]*\) ms.*/\1/p' "$T/kin.log" | sort -n |
	awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "n/a")}')
# Adoption: killed, started again on the same state directory.
state_bytes=$(stat -c %s "$T/state/state" 2>/dev/null || echo '?')
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null || true
start_kin "$T/kin2.log"
wait_for "grep -q 'ready:' '$T/kin2.log'" 500
adopt_ms=$(sed -n 's/.*ready: .*, \([0-9.]*\) ms after exec.*/\1/p' "$T/kin2.log" | head -1)
adopted=$(sed -n 's/.*cells: [0-9]* cells and \([0-9]*\) executables adopted.*/\1/p' "$T/kin2.log")
running2=$("$KIN" ctl --socket "$S" exec list | grep -c ' running ' || true)
zadopted=$(sed -n 's/.*adopt: \([0-9]*\) zones adopted.*/\1/p' "$T/kin2.log")
wait_for "[ \$(\"$KIN\" ctl --socket '$S' zone list | grep -c ' running .* ready\$') -ge ${zadopted:-0} ]" 100 || true
zones2=$("$KIN" ctl --socket "$S" zone list | grep -c ' running .* ready$' || true)
echo "== reexec: $EXECS executables in 10 cells, $ZONES zones, 64 clients calling, $ROUNDS re-execs"
echo "   kin does not answer (client's view): median ${median:-n/a} ms, max ${max:-n/a} ms (goal <= 20 ms)"
echo "   kin's own view, from its last answer to ready again: median ${silent} ms"
echo "   old kin writes the state: median ${written} ms (${bytes:-?} bytes); new kin exec -> ready again: median ${again} ms (restore alone ${restore} ms)"
echo "   cold start, exec -> ready (no load): ${cold:-n/a} ms"
echo "   still running after it all: $running of $EXECS executables, $zones of $ZONES zones (ready)"
echo "   adoption after SIGKILL: exec -> ready ${adopt_ms:-n/a} ms (file state ${state_bytes} bytes), ${adopted:-0} executables adopted, $running2 of $EXECS running; ${zadopted:-0} zones adopted, $zones2 of $ZONES answering"
