#!/usr/bin/env bash
# Soak with faults (#15): a daemon kin runs cells of restarting executables
# that print numbered lines ("RUN-i", RUN the run's pid), clients call it
# without pause, follow logs and events, and two of them stall (one mid-
# frame, one a stopped log follower); meanwhile the test re-executes kin
# every few seconds, SIGKILLs it and starts a successor on the same state
# directory (adoption), and kills random workload processes. At the end:
# every run's lines are there once each and in order (no gap, no
# duplicate, none dropped), every executable is accounted for, no zombie,
# the fds and memfds of kin steady across more re-execs, no cgroup but
# the cells made, one keeper, kin's RSS flat, every name reusable, a
# clean stop. Zones two deep (z1, z2 inside it) run a ticker at the bottom
# and are re-executed too (the root's re-exec carries them, then z1's and
# z2's own); a SIGKILLed kin's successor adopts them (the same zone kin,
# answering again), so z2's ticker runs untouched from start to end.
# SOAK_SECONDS long (20 in `make check`, 300 in `make soak`).
# Services run too (--unit-dir): a restarting simple service keeps its
# main pid across every re-exec and every SIGKILL (the same process,
# still watched: carried, or adopted by the successor), and a timer fires
# on throughout.
# Not here: VMs and full pids.max / memory.max (the host's cgroup2 has no
# controllers: tests/vm/soak runs the same faults in a guest, with real
# limits, and SIGKILLs the host kin that runs it), shim pods (they need a
# containerd: tests/ns/shim and vm/kin-vm re-execute a shim's kin under
# one).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin soak

ns_need_cgroup2
SECS=${SOAK_SECONDS:-20}
TOP=kin-soak-test-$$
cleanup() {
	rm -f "$T/run"
	for p in ${BG:-}; do kill -KILL "$p" 2>/dev/null; done
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
SD=$T/state
BASE=$CG/$TOP/d
CELLS=$BASE/cells
mkdir -p "$BASE"
BG=
# Services: a simple one printing numbered lines (Restart=always), and a
# timer's oneshot counting its runs.
U=$T/units O=$T/o
mkdir -p "$U" "$O" "$T/urun"
cat >"$U/soak.target" <<EOF
[Unit]
Wants=svc.service t.timer
EOF
cat >"$U/svc.service" <<EOF
[Service]
ExecStart=/bin/sh -c 'i=0; while :; do i=\$\$((i+1)); echo s-\$\$i; sleep 0.01; done'
Restart=always
RestartSec=100ms
EOF
cat >"$U/t.timer" <<EOF
[Timer]
OnActiveSec=100ms
OnUnitActiveSec=300ms
AccuracySec=1ms
EOF
cat >"$U/t.service" <<EOF
[Unit]
StartLimitIntervalSec=0
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo run >>$O/t.runs'
EOF
daemon_start() {
	ns_daemon_start "$T/kin.log" --log-level info --grace 2s --socket "$S" --state-dir "$SD" --zone-dir "$T/zones" \
		--unit-dir "$U" --unit-run-dir "$T/urun" --default-target soak.target
}
svc_pid() { "$KIN" ctl --socket "$S" service status svc.service 2>/dev/null | sed -n 's/^ *Main PID: \([0-9]*\).*/\1/p'; }
svc_up() { wait_for "[ -n \"\$(svc_pid)\" ]" 200; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$DPID/status" 2>/dev/null; }
fds() { ls "/proc/$DPID/fd" 2>/dev/null | wc -l; }
fd_list() { for f in /proc/"$DPID"/fd/*; do readlink "$f"; done 2>/dev/null | sed 's/[0-9]\+]$/N]/' | sort; }
memfds() { find "/proc/$DPID/fd" -lname '/memfd:*' 2>/dev/null | wc -l; }

# Zones two deep on the parent's root, a ticker in z2; adopted after each
# SIGKILL. (A call while a route is not ready yet: UNAVAILABLE, retried as
# a client would.)
zc() {
	for _ in $(seq 100); do
		"$KIN" ctl --socket "$S" "$@" >"$T/zup" 2>&1 && return 0
		grep -q UNAVAILABLE "$T/zup" || return 1
		sleep 0.05
	done
	return 1
}
zones_up() {
	zc zone create z1 && zc --target z1 zone create z2 && zc --target z1/z2 cell create c &&
		zc --target z1/z2 exec start c tick -- \
			sh -c 'i=0; while :; do i=$((i+1)); echo "z-$i"; sleep 0.01; done'
}
zone_pids() { "$KIN" ctl --socket "$S" -o json zone status z1 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p'; }
# The successor adopted them: z1 the same zone kin, z2 answering through it.
zones_adopted() {
	zc --target z1/z2 exec status c tick && [ "$(zone_pids)" = "$zp" ]
}

daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }

# Three cells, each with a ticker (runs until killed, then restarted) and
# two that print 40 lines and fail (restarted on failure, with backoff).
EXECS=
for c in c1 c2 c3; do
	kc cell create $c || { bad setup "$(cat "$T/out")"; exit 1; }
	kc exec start --restart on-failure --log-size 4M $c tick -- \
		sh -c 'i=0; while :; do i=$((i+1)); echo "$$-$i"; sleep 0.01; done'
	for w in w1 w2; do
		kc exec start --restart on-failure --log-size 4M $c $w -- \
			sh -c 'i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo "$$-$i"; sleep 0.01; done; exit 3'
	done
	EXECS="$EXECS $c/tick $c/w1 $c/w2"
done
[ $rc -eq 0 ] && ok workloads_started || { bad workloads_started "$(cat "$T/out")"; exit 1; }
zones_up && ok zones_started || { bad zones_started "$(tail -5 "$T/kin.log")"; exit 1; }
zp=$(zone_pids)
svc_up && ok services_started || { bad services_started "$(tail -5 "$T/kin.log")"; exit 1; }
sp=$(svc_pid)

touch "$T/run"
# Callers: list and status without pause; a log follower and an event
# follower that reconnect when kin re-execs or dies.
for n in 1 2 3 4; do
	(while [ -e "$T/run" ]; do
		if "$KIN" ctl --socket "$S" exec list >/dev/null 2>&1; then echo ok; else echo fail; fi
	done >"$T/calls.$n") &
	BG="$BG $!"
done
(while [ -e "$T/run" ]; do "$KIN" ctl --socket "$S" exec logs -f c1 tick >/dev/null 2>&1; sleep 0.05; done) &
BG="$BG $!"
(while [ -e "$T/run" ]; do "$KIN" ctl --socket "$S" events >/dev/null 2>&1; sleep 0.05; done) &
BG="$BG $!"
# Stalled: a follower that never reads, and a caller that sends half a
# ttrpc frame header and waits.
"$KIN" ctl --socket "$S" exec logs -f c2 tick >/dev/null 2>&1 &
STALLED=$!
BG="$BG $STALLED"
sleep 0.2
kill -STOP "$STALLED"
python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1]); s.send(b"\x00\x00\x00"); time.sleep(3600)' "$S" 2>/dev/null &
BG="$BG $!"

# The faults, every half second: a random workload process killed; a
# re-exec every 3 s; a SIGKILL and a successor every 7 s.
reexecs=0 reexec_fails=0 crashes=0 crash_fails=0 kills=0 k=0 zone_fails=0 zreexecs=0 svc_fails=0
end=$(($(date +%s) + SECS))
while [ "$(date +%s)" -lt "$end" ]; do
	sleep 0.5
	k=$((k + 1))
	victim=$(cat "$CELLS"/c*/cgroup.procs 2>/dev/null | shuf -n 1)
	[ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null && kills=$((kills + 1))
	if [ $((k % 6)) -eq 0 ]; then
		kc reexec
		reexecs=$((reexecs + 1))
		[ $rc -eq 0 ] || { reexec_fails=$((reexec_fails + 1)); cp "$T/out" "$T/reexec-fail.$k"; }
		# the service's main pid goes along: the same process
		[ "$(svc_pid)" = "$sp" ] || { svc_fails=$((svc_fails + 1)); echo "re-exec $k: main pid $(svc_pid), was $sp" >>"$T/svc-fail"; sp=$(svc_pid); }
		# and a zone kin, in turn z1 and z2
		zt=z1
		[ $((k % 12)) -eq 0 ] && zt=z1/z2
		kc --target $zt reexec
		zreexecs=$((zreexecs + 1))
		[ $rc -eq 0 ] || { reexec_fails=$((reexec_fails + 1)); cp "$T/out" "$T/reexec-fail.z$k"; }
	fi
	if [ $((k % 14)) -eq 7 ]; then
		cat "$CELLS"/c*/cgroup.procs >>"$T/at-crash" 2>/dev/null
		kill -KILL "$DPID"
		wait "$DPID" 2>/dev/null
		# and after: a run restarted between the first look and the kill
		cat "$CELLS"/c*/cgroup.procs >>"$T/at-crash" 2>/dev/null
		crashes=$((crashes + 1))
		daemon_start
		serving || crash_fails=$((crash_fails + 1))
		zones_adopted || { zone_fails=$((zone_fails + 1)); cp "$T/zup" "$T/zone-fail.$k"; }
		# the service, adopted: the same main pid
		svc_up && [ "$(svc_pid)" = "$sp" ] ||
			{ svc_fails=$((svc_fails + 1)); echo "successor $k: main pid $(svc_pid), was $sp" >>"$T/svc-fail"; sp=$(svc_pid); }
	fi
done
rm -f "$T/run"
echo "    ($SECS s: $reexecs re-execs and $zreexecs of zone kins, $crashes SIGKILLs and successors, $kills workload kills)"
[ "$reexecs" -gt 0 ] && [ $reexec_fails -eq 0 ] && ok reexecs_under_load ||
	bad reexecs_under_load "$reexec_fails of $((reexecs + zreexecs)) failed: $(cat "$T"/reexec-fail.* 2>/dev/null | head -3)"
[ $zone_fails -eq 0 ] && ok zones_adopted_after_crashes ||
	bad zones_adopted_after_crashes "$zone_fails of $crashes: $(cat "$T"/zone-fail.* | head -5)"
[ "$crashes" -gt 0 ] && [ $crash_fails -eq 0 ] && ok successors_serve ||
	bad successors_serve "$crash_fails of $crashes successors did not serve"
[ $svc_fails -eq 0 ] && ok services_through_reexecs_and_crashes ||
	bad services_through_reexecs_and_crashes "$(head -3 "$T/svc-fail")"

exec 3>&2 2>/dev/null # bash's "Killed" notes
kill -KILL "$STALLED"
for p in $BG; do kill -KILL "$p"; done
for p in $BG; do wait "$p"; done # not the daemon: it runs on
exec 2>&3 3>&-
BG=
serving && ok serving_after_soak || { bad serving_after_soak "no SERVING"; tail -20 "$T/kin.log"; exit 1; }
okcalls=$(cat "$T"/calls.* | grep -c '^ok')
[ "$okcalls" -gt 20 ] && ok callers_answered || bad callers_answered "only $okcalls calls answered"

# Every run's lines: 1, 2, 3... once each, none missing in between. A
# run that was running when kin was SIGKILLed may begin later than 1:
# its earlier lines were in the dead kin's rings (they are not kept
# across a crash yet; what a run printed while no kin ran is, through
# the keeper); the dead kin may have read part of a line, so the first
# line after the cut can be the tail of one ("11-180" or "80" of
# "2711-180").
# Any other gap, a duplicate, or a drop fails.
# (The faults are over: the tickers, restarted from their backoff or
# adopted by the last successor, print again before their lines count.)
ticking() { for c in c1 c2 c3; do "$KIN" ctl --socket "$S" exec logs $c tick 2>/dev/null | grep -q . || return 1; done; }
wait_for ticking 500
bad_lines="" runs=0 crash_cut=0
touch "$T/at-crash"
for x in $EXECS; do
	"$KIN" ctl --socket "$S" exec logs "${x%/*}" "${x#*/}" >"$T/lines" 2>"$T/lines.err" ||
		bad_lines="$bad_lines $x: exec logs: $(cat "$T/lines.err");"
	r=$(awk -F- -v crashfile="$T/at-crash" '
		BEGIN { while ((getline p < crashfile) > 0) { crashed[p] = 1; ncrashed++ } }
		NF == 1 && $1 ~ /^[0-9]+$/ && ncrashed { cut++; next }
		NF == 0 && ncrashed { cut++; next }
		NF != 2 || $2 !~ /^[0-9]+$/ { print "odd line: " $0; exit }
		function frag(id, p) { for (p in crashed) if (length(p) > length(id) && substr(p, length(p) - length(id) + 1) == id) return 1; return 0 }
		!($1 in last) && $2 != 1 && !($1 in crashed) && frag($1) { cut++; next }
		!($1 in last) { runs++; if ($2 != 1) { if ($1 in crashed) cut++; else { print "run " $1 " begins at " $2; exit } } last[$1] = $2; next }
		{ if ($2 != last[$1] + 1) { print "run " $1 ": " $2 " after " last[$1]; exit }; last[$1] = $2 }
		END { printf "RUNS %d %d\n", runs, cut }' "$T/lines")
	runs=$((runs + $(echo "$r" | awk '/^RUNS/ {print $2}')))
	crash_cut=$((crash_cut + $(echo "$r" | awk '/^RUNS/ {print $3}')))
	r=$(echo "$r" | grep -v '^RUNS')
	grep -q dropped "$T/lines.err" && r="$r $(grep dropped "$T/lines.err")"
	[ -n "$r" ] && bad_lines="$bad_lines $x: $r;"
done
echo "    ($runs runs in the logs, $crash_cut of them cut by a SIGKILLed kin)"
[ -z "$bad_lines" ] && [ $runs -gt 0 ] && ok every_line_once_in_order ||
	bad every_line_once_in_order "$runs runs;$bad_lines"

# Every executable accounted for: listed, running or waiting to restart.
kc exec list
n=0
for x in $EXECS; do
	grep -qE "^${x%/*} +${x#*/} +(running|starting|backoff) " "$T/out" && n=$((n + 1))
done
[ $n -eq 9 ] && ok every_exec_accounted || bad every_exec_accounted "$n of 9 listed running or backing off"

# The zones made at the start: the same zone kin all along (re-execs
# carried it, successors adopted it), listed ready, z2's ticker with every
# line once.
kc zone list
[ -n "$zp" ] && [ "$(zone_pids)" = "$zp" ] && out_has '^z1 +namespace running .* ready$' &&
	out_has '^  z2 +namespace running .* ready$' && ok zones_carried ||
	bad zones_carried "z1 pid $(zone_pids) vs $zp"
"$KIN" ctl --socket "$S" --target z1/z2 exec logs c tick >"$T/zlines" 2>&1
zn=$(wc -l <"$T/zlines")
[ "$zn" -gt 10 ] && seq 1 "$zn" | sed 's/^/z-/' | cmp -s - "$T/zlines" && ok zone_lines_once_in_order ||
	bad zone_lines_once_in_order "$zn lines: $(seq 1 "$zn" | sed 's/^/z-/' | diff - "$T/zlines" | head -3 | tr '\n' ' ')"

# The service printed on, every line once and in order since the last
# SIGKILL (what it printed before was in the dead kin's ring; the cut may
# leave the tail of a line first; a restart begins at s-1 again); the
# timer fired after the last fault.
runs_t=$(wc -l <"$O/t.runs")
"$KIN" ctl --socket "$S" service logs svc.service >"$T/slines" 2>&1
sn=$(grep -c '^s-' "$T/slines")
sbad=$(awk -v crashes="$crashes" '
	NR == 1 && crashes && $0 !~ /^s-[0-9]+$/ { next }
	$0 !~ /^s-[0-9]+$/ { print "odd line " NR ": " $0; exit }
	{ n = substr($0, 3) + 0; if (last && n != last + 1 && n != 1) { print "s-" n " after s-" last; exit }; last = n; lines++ }
	END { if (lines < 10) print "only " lines " lines" }' "$T/slines")
[ -z "$sbad" ] && ok service_lines_once_in_order || bad service_lines_once_in_order "$sn lines: $sbad"
wait_for "[ \$(wc -l <'$O/t.runs') -gt $runs_t ]" 100 && ok timer_fires_on || bad timer_fires_on "$runs_t runs, no more"

# No zombie of kin's left unreaped.
sleep 0.5
zombies=$(for p in $(cat "$BASE"/cgroup.procs "$CELLS"/*/cgroup.procs 2>/dev/null); do
	awk '{print $3, $4}' "/proc/$p/stat" 2>/dev/null
done | awk -v k="$DPID" '$1 == "Z" && $2 == k' | wc -l)
[ "$zombies" -eq 0 ] && ok no_zombie || bad no_zombie "$zombies zombies"

# Steady: no more fds or memfds after five more re-execs; RSS flat.
# The runs that come and go (and their pipes) stop first; the tickers,
# no longer killed, run on.
for c in c1 c2 c3; do kc exec stop $c w1; kc exec stop $c w2; done
wait_for "[ \$('$KIN' ctl --socket '$S' exec list | grep -cE ' tick +running ') -eq 3 ]" 1500
kc reexec
sleep 0.3 # the callers' connections, gone, are let go
rss0=$(rss_kb)
fd0=$(fds) mf0=$(memfds)
fd_list >"$T/fds0"
for _ in 1 2 3 4 5; do kc reexec; sleep 0.2; done
kc exec list >/dev/null
fd1=$(fds) mf1=$(memfds) rss1=$(rss_kb)
fd_list >"$T/fds1"
# (Fewer is no leak: an executable's timer is made when first needed and
# kept; a re-exec makes it again only where one is armed.)
[ "$fd1" -le "$fd0" ] && [ "$mf1" -le "$mf0" ] && ok fds_steady ||
	bad fds_steady "fds $fd0 -> $fd1, memfds $mf0 -> $mf1: $(diff "$T/fds0" "$T/fds1" | grep '^[<>]' | tr '\n' ' ')"
[ -n "$rss0" ] && [ -n "$rss1" ] && [ "$rss1" -le $((rss0 * 3 / 2 + 4096)) ] && ok rss_flat ||
	bad rss_flat "VmRSS ${rss0:-?} kB -> ${rss1:-?} kB"

# Only the cells made, one keeper.
cells=$(cd "$CELLS" && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')
[ "$cells" = "./c1 ./c2 ./c3 ./system.slice ./zones " ] && ok no_stray_cgroup || bad no_stray_cgroup "cells: $cells"
keepers=0
for p in $(find "$CG/$TOP" -name cgroup.procs -exec cat {} + 2>/dev/null); do
	tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -q ' keeper ' && keepers=$((keepers + 1))
done
[ $keepers -eq 1 ] && ok one_keeper || bad one_keeper "$keepers keepers"

# Every name usable again.
kc cell delete --force c3
kc cell create c3 && kc exec start c3 tick -- true && kc exec wait c3 tick
[ $rc -eq 0 ] && ok names_reusable || bad names_reusable "exit $rc: $(cat "$T/out")"

kill -TERM "$DPID"
wait_for "! kill -0 $DPID 2>/dev/null" 500 && [ ! -e "$SD/state" ] && ok clean_stop ||
	bad clean_stop "kin did not stop, or its state is left"
DPID=
clean_log "$T/kin.log" && ok no_sanitizer_reports ||
	bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
