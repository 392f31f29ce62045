#!/usr/bin/env bash
# Zones adopted after a crash (docs/reexec.md "After a crash"): a daemon kin with a
# state directory runs zones — z1 with a network and a root of its own, an
# executable printing numbered lines in it; z2 with a zone of its own
# (z2/inner) — and is killed with SIGKILL. The zone kins run on; the
# successor adopts them: the same zone kins (pids), reached through their
# routes again (two deep too), their lines all there, their log files
# going on (the keeper held their log pipes), their addresses held. A zone
# whose kin ended while no kin ran, and a zone cell with no zone record,
# are killed and removed with a log line; every name is usable again. An
# adopted zone stops cleanly, its cgroup, veth and reconnect socket gone;
# a second SIGKILL is adopted the same way; a clean stop leaves nothing.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin adopt-zones

ns_need_cgroup2
TOP=kin-adz-test-$$
BASE=$CG/$TOP/d
CELLS=$BASE/cells
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	veths_remove "kz"
	rm -rf "$T"
}
trap cleanup EXIT

BB=$T/bbroot
ns_busybox_root "$BB"
S=$T/k.sock
SD=$T/state
daemon_start() {
	ns_daemon_start "$T/kin.log" --log-level debug --grace 3s --socket "$S" --state-dir "$SD" \
		--zone-dir "$T/zones"
}
zpid() { kc ${2:+--target "$2"} -o json zone status "$1"; sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/out"; }
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(sed -E 's/.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
log_has() { grep -qE -- "$1" "$T/kin.log"; }

daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }
N=600
kc zone create z1 --net --root "$BB" &&
	kc --target z1 cell create a &&
	kc --target z1 exec start a tick -- /bin/busybox sh -c \
		"i=0; while [ \$i -lt $N ]; do i=\$((i+1)); echo n\$i; /bin/busybox sleep 0.01; done" &&
	kc zone create z2 && kc --target z2 zone create inner && kc zone create z3 ||
	{ bad setup "rc $rc: $(cat "$T/out")"; exit 1; }
# (pin: the inner zone kin's pid as z2 sees it)
p1=$(zpid z1) p2=$(zpid z2) p3=$(zpid z3) pin=$(zpid inner z2)
kc -o json zone status z1
addr=$(sed -n 's/.*"address":"\([^"]*\)".*/\1/p' "$T/out")
hostif=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^kz$DPID\." | head -1)
[ -n "$p1" ] && [ -n "$p2" ] && [ -n "$pin" ] && [ -n "$addr" ] && ip link show "$hostif" >/dev/null 2>&1 &&
	[ -S "$SD/zones/z1.sock" ] && ok zones_running || { bad zones_running "$p1 $p2 $pin $addr $hostif"; exit 1; }
# The reconnect socket takes no one but a root process outside the zone:
# one inside z1's pid namespace (root, the path reachable) is closed at once.
cat >"$T/peek.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1]); s.settimeout(3)
try:
    print("closed" if s.recv(1) == b"" else "open")
except socket.timeout:
    print("open")
except OSError:
    print("closed")
EOF
inside=$(nsenter -t "$p1" -p -- python3 "$T/peek.py" "$SD/zones/z1.sock" 2>&1)
[ "$inside" = closed ] && grep -q 'is not the parent kin; its connection is closed' "$T/zones/z1.log" &&
	ok reconnect_refuses_the_zone_itself || bad reconnect_refuses_the_zone_itself "$inside: $(tail -3 "$T/zones/z1.log")"
# The keeper of pipes dies: kin starts a new one and hands it the zones'
# log pipes again (else, with kin killed next, z1's log would be lost).
keeper_pid() {
	for p in $(find "$BASE" -name cgroup.procs -exec cat {} + 2>/dev/null); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q ' keeper ' && echo "$p"
	done
}
k1=$(keeper_pid)
[ -n "$k1" ] && kill -KILL "$k1"
wait_for "[ -n \"\$(keeper_pid)\" ] && [ \"\$(keeper_pid)\" != '$k1' ]" 200 &&
	log_has 'the keeper of pipes ended; a new one holds them' && ok keeper_restarted ||
	bad keeper_restarted "keeper $k1 -> $(keeper_pid)"
sleep 0.2 # the state is rewritten within 20 ms of the last change
log1=$(wc -c <"$T/zones/z1.log")

kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
# While no kin runs: z3's kin ends, a cell with no zone appears, z1's kin
# goes on logging (its log pipe is the keeper's).
kill -KILL "$p3"
mkdir "$CELLS/zones/stray"
sleep 0.3
! gone "$p1" && ! gone "$p2" && ok zone_kins_outlive_their_parent ||
	bad zone_kins_outlive_their_parent "z1 $p1 z2 $p2"

daemon_start
serving && ok successor_serving || { bad successor_serving "$(tail -5 "$T/kin.log")"; exit 1; }
log_has "adopt: zone \"z1\": kin pid $p1 adopted" && log_has "adopt: zone \"z2\": kin pid $p2 adopted" &&
	ok zones_adopted || bad zones_adopted "$(grep 'adopt' "$T/kin.log" | tail -8)"
wait_for "kc zone list; out_has '^z1 .*running.*ready' && out_has '^z2 .*running.*ready'" 100
[ "$(zpid z1)" = "$p1" ] && [ "$(zpid z2)" = "$p2" ] && [ "$(zpid inner z2)" = "$pin" ] &&
	ok same_zone_kins_reachable || bad same_zone_kins_reachable "z1 $(zpid z1) z2 $(zpid z2): $(cat "$T/out")"
kc -o json zone status z1
out_has "\"address\":\"$addr\"" && ip link show "$hostif" >/dev/null 2>&1 && ok address_kept ||
	bad address_kept "$(cat "$T/out")"
kc --target z1 exec wait a tick
kc --target z1 exec logs a tick
seq 1 $N | sed 's/^/n/' | cmp -s - "$T/out" && ok zone_workload_untouched ||
	bad zone_workload_untouched "$(wc -l <"$T/out") lines"
grep -q 'a successor of the parent kin' "$T/zones/z1.log" && [ "$(wc -c <"$T/zones/z1.log")" -gt "$log1" ] &&
	ok zone_log_goes_on || bad zone_log_goes_on "$(tail -3 "$T/zones/z1.log")"
wait_for "[ ! -d '$CELLS/zones/z3' ] && [ ! -d '$CELLS/zones/stray' ]" 100 &&
	log_has 'adopt: zone "z3" \(pid [0-9]+\) cannot be taken over: its kin has ended.*; killed' &&
	log_has 'cell "zones/stray", left by an earlier kin, is not adopted \(no record of it\)' &&
	ok unadoptable_removed || bad unadoptable_removed "$(grep 'adopt' "$T/kin.log" | tail -5)"
kc zone create z3 && kc zone stop z3 && ok name_reusable || bad name_reusable "rc $rc: $(cat "$T/out")"

# An adopted zone stops cleanly: nothing of it left.
kc zone stop z1
[ $rc -eq 0 ] && out_has 'gone \(status unknown\)' && gone "$p1" && [ ! -d "$CELLS/zones/z1" ] && ! ip link show "$hostif" >/dev/null 2>&1 &&
	[ ! -e "$SD/zones/z1.sock" ] && ok adopted_zone_stops_clean ||
	bad adopted_zone_stops_clean "rc $rc: $(cat "$T/out")"

# Killed again: adopted again (a zone kin takes a new successor too), and
# a re-exec carries the adopted zone.
sleep 0.2
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
daemon_start
wait_for "kc zone list; out_has '^z2 .*running.*ready'" 100
[ "$(zpid z2)" = "$p2" ] && [ "$(zpid inner z2)" = "$pin" ] && ok adopted_twice ||
	bad adopted_twice "$(cat "$T/out")"
kc reexec
[ $rc -eq 0 ] && [ "$(zpid inner z2)" = "$pin" ] && ok reexec_after_adoption || {
	bad reexec_after_adoption "rc $rc: $(cat "$T/out")"
	tail -20 "$T/zones/z2.log"
	grep -E 're-exec|z2' "$T/kin.log" | tail -20
}

kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
drc=$?
DPID=
[ $drc -eq 0 ] && gone "$p2" && [ ! -d "$CELLS/zones" ] && ok stops_clean ||
	bad stops_clean "exit $drc; $(ls "$CELLS" 2>&1)"
clean_log "$T/kin.log" && ok no_sanitizer_reports || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
