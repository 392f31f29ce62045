#!/usr/bin/env bash
# Re-exec in place (`kin ctl reexec`, docs/reexec.md): a daemon kin with
# executables printing numbered lines, one exiting mid-way and one in its
# restart backoff, re-executes itself again and again. Nothing is lost:
# every line once and in order, the exit status seen, the backoff going on,
# the same pids (still kin's children), no fd leaked; a log follower ends
# UNAVAILABLE to retry. Binaries that are not a kin are refused before
# anything happens, and a new kin that cannot read the state hands it back
# to the previous binary, which takes over and says why. A client's
# connection goes along each re-exec (its next call answered by the new kin).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin reexec

ns_need_cgroup2
TOP=kin-reexec-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
BASE=$CG/$TOP/d
ns_daemon_start "$T/kin.log" --log-level debug --grace 2s --socket "$S"
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }
pid_of() { kc -o json exec status a "$1"; sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$T/out"; }

N=400
kc cell create a
for c in c1 c2 c3; do
	kc exec start a $c -- sh -c "i=0; while [ \$i -lt $N ]; do i=\$((i+1)); echo $c-\$i; sleep 0.004; done"
done
kc exec start a quick -- sh -c 'sleep 0.4; exit 7'
kc exec start --restart on-failure a crashy -- sh -c 'exit 3'
kc exec start a forever -- sleep 100000
sleep 0.3
kc -o json exec status a crashy
restarts0=$(sed -n 's/.*"restarts":\([0-9]*\).*/\1/p' "$T/out")
pid1=$(pid_of forever)
"$KIN" ctl --socket "$S" exec logs -f a c2 >"$T/follow" 2>"$T/follow.err" &
FPID=$!
sleep 0.1
ns_fds >"$T/fds0"
# A client on one connection calls Health/Check all along: its connection
# goes along every re-exec, each call answered.
python3 tests/ns/health_conn.py "$S" "$T/one-conn.stop" loop >"$T/one-conn" 2>&1 &
ONE=$!

# Re-exec while the counters print, the quick one exits, the crashy one restarts.
n_ok=0
for i in 1 2 3 4 5 6; do
	kc reexec
	[ $rc -eq 0 ] && out_has '^re-executed .*, pid '"$DPID"', answering again after' && n_ok=$((n_ok + 1))
	sleep 0.15
done
[ $n_ok -eq 6 ] && ok reexec_six_times || bad reexec_six_times "$n_ok of 6 re-execs answered ($(grep 're-exec' "$T/kin.log" | tail -3))"
touch "$T/one-conn.stop"
wait "$ONE"
[ $? -eq 0 ] && grep -q '^ok [0-9]* calls on one connection' "$T/one-conn" && ok client_connection_goes_along ||
	bad client_connection_goes_along "$(cat "$T/one-conn")"

kc version
out_has "^pid: +$DPID$" && serving && ok same_pid_serving || bad same_pid_serving "$(cat "$T/out")"

wait "$FPID"
frc=$?
[ $frc -eq 1 ] && grep -q 'UNAVAILABLE: kin is re-executing; retry' "$T/follow.err" &&
	grep -q '^c2-1$' "$T/follow" && ok follower_ends_unavailable ||
	bad follower_ends_unavailable "exit $frc: $(cat "$T/follow.err")"

[ "$(pid_of forever)" = "$pid1" ] && [ "$(awk '{print $4}' /proc/$pid1/stat 2>/dev/null)" = "$DPID" ] &&
	ok still_kins_children || bad still_kins_children "pid $(pid_of forever) vs $pid1, ppid $(awk '{print $4}' /proc/$pid1/stat 2>/dev/null)"
kc exec stop a forever

for c in c1 c2 c3; do kc exec wait a $c; done
lines_ok=0
for c in c1 c2 c3; do
	kc exec logs a $c
	seq 1 $N | sed "s/^/$c-/" | cmp -s - "$T/out" && lines_ok=$((lines_ok + 1)) ||
		echo "    | $c: $(wc -l <"$T/out") lines; $(seq 1 $N | sed "s/^/$c-/" | diff - "$T/out" | head -3 | tr '\n' ' ')"
done
[ $lines_ok -eq 3 ] && ok every_line_once_in_order || bad every_line_once_in_order "$lines_ok of 3 complete"

kc -o json exec wait a quick
out_has '"exit_code":7' && ok exit_status_across_reexec || bad exit_status_across_reexec "$(cat "$T/out")"

kc -o json exec status a crashy
restarts1=$(sed -n 's/.*"restarts":\([0-9]*\).*/\1/p' "$T/out")
[ -n "$restarts0" ] && [ "${restarts1:-0}" -gt "$restarts0" ] && ok backoff_goes_on ||
	bad backoff_goes_on "restarts $restarts0 then $restarts1"
kc exec stop a crashy

new=$(ns_fds_back "$T/fds0") && ok no_fd_leaked || bad no_fd_leaked "more than before: $new"

# A cell's state goes along with its watch: frozen stays frozen (and thaws),
# and a cell emptied while the new kin starts is seen empty (the event
# waited in the inotify that went along).
kc cell create fz
kc exec start fz s -- sleep 100000
kc cell create em
kc exec start em short -- sh -c 'sleep 0.05'
kc cell freeze fz
kc reexec
kc -o json cell show fz
f1=$(grep -c '"frozen":true' "$T/out")
wait_for "kc -o json cell show em; out_has '\"populated\":false'" 250
em=$rc
kc cell thaw fz
kc -o json cell show fz
f2=$(grep -c '"frozen":false' "$T/out")
[ "$f1" = 1 ] && [ "$em" = 0 ] && [ "$f2" = 1 ] && ok cell_states_go_along ||
	bad cell_states_go_along "frozen after re-exec $f1, emptied $em, thawed $f2"
kc exec stop fz s
kc cell delete em

# The running binary's sealed copy (the fallback, a zone kin's binary) is
# made by the probe's child and handed along: the next kin of the same
# file keeps it for its next re-exec; another file's kin does not (it runs
# something else). With no zone to keep it, it is let go a while after.
copies() {
	for f in /proc/$DPID/fd/*; do
		case $(readlink "$f") in /memfd:kin*) stat -L -c %i "$f" ;; esac
	done | sort -u | tr '\n' ' '
}
kc reexec
c1=$(copies)
kc reexec
c2=$(copies)
cp "$KIN" "$T/kin-copy"
kc reexec --binary "$T/kin-copy"
kc reexec
c3=$(copies)
[ "$(echo $c1 | wc -w)" = 1 ] && [ "$c1" = "$c2" ] && [ "$(echo $c3 | wc -w)" = 1 ] && [ "$c3" != "$c1" ] &&
	[ "$(readlink /proc/$DPID/exe)" = "$T/kin-copy" ] && serving && ok binary_copied_once ||
	bad binary_copied_once "copies: $c1 / $c2 / $c3; exe $(readlink /proc/$DPID/exe)"
wait_for '[ -z "$(copies)" ]' 400 && ok binary_copy_let_go || bad binary_copy_let_go "still $(copies)"

# Binaries that are not a kin (of this state format) are refused first.
kc reexec --binary /bin/true
[ $rc -eq 1 ] && out_has 'FAILED_PRECONDITION: re-exec: /bin/true is not a kin that reads state format [0-9]+: it does not say' ||
	{ bad refuses_other_binaries "true: $(cat "$T/out")"; }
kc reexec --binary /nonexistent/kin
r2=$rc; cp "$T/out" "$T/out2"
kc reexec --binary relative/kin
[ $r2 -eq 1 ] && grep -q 'it does not run: No such file' "$T/out2" && [ $rc -eq 1 ] &&
	out_has 'INVALID_ARGUMENT: .*not an absolute path' && serving && ok refuses_other_binaries ||
	bad refuses_other_binaries "nonexistent: $(cat "$T/out2"); relative: $(cat "$T/out")"

# A new kin that cannot read the state (here: one that says format 99,
# a format no kin writes): the previous binary takes it back; the
# workload never notices.
fmt=$("$KIN" version --state-format | sed -n 's/^kin-state-format //p')
printf 'KINSTATE\143\000\000\000\000\000\000\000' >"$T/format99.state"
cat >"$T/kin-new" <<EOF
#!/bin/sh
[ "\$1" = version ] && { echo kin-state-format $fmt; exit 0; }
exec 9<"$T/format99.state"
KIN_STATE_FD=9 exec "$KIN" "\$@"
EOF
chmod +x "$T/kin-new"
kc exec start a long -- sh -c 'i=0; while :; do i=$((i+1)); echo l$i; sleep 0.01; done'
lpid=$(pid_of long)
kc reexec --binary "$T/kin-new"
[ $rc -eq 1 ] && out_has "^kin ctl: re-exec: the state handed over is in format 99; this kin .* reads $fmt" &&
	serving && [ "$(pid_of long)" = "$lpid" ] && kill -0 "$lpid" && ok fallback_to_previous_binary ||
	bad fallback_to_previous_binary "rc $rc; $(grep 're-exec' "$T/kin.log" | tail -3)"
kc -o json version
out_has '"reexec_error":"re-exec: the state handed over is in format 99' && ok version_says_why ||
	bad version_says_why "$(cat "$T/out")"
kc exec stop a long
kc exec logs a long
l=$(tail -1 "$T/out" | tr -d l)
seq 1 "$l" | sed 's/^/l/' | cmp -s - "$T/out" && ok fallback_lost_no_line || bad fallback_lost_no_line "$(wc -l <"$T/out") lines, last $l"

# A binary that never answers the probe: the loop goes on meanwhile, a
# second re-exec is ABORTED, the probe's deadline ends the first.
printf '#!/bin/sh\nexec sleep 1000\n' >"$T/kin-hang"
chmod +x "$T/kin-hang"
"$KIN" ctl --socket "$S" reexec --binary "$T/kin-hang" >"$T/hang.out" 2>&1 &
HPID=$!
sleep 0.3
kc reexec
r2=$rc; cp "$T/out" "$T/out2"
serving && [ $r2 -eq 1 ] && grep -q 'ABORTED: re-exec: one is already under way' "$T/out2" &&
	wait "$HPID"; hrc=$?
[ $r2 -eq 1 ] && [ $hrc -eq 1 ] && grep -q 'DEADLINE_EXCEEDED: re-exec: .*kin-hang did not answer' "$T/hang.out" &&
	ok hung_probe_has_a_deadline || bad hung_probe_has_a_deadline "second: $(cat "$T/out2"); first: $(cat "$T/hang.out")"

# kin told to stop while a probe runs: it stops as ever, nothing left behind.
"$KIN" ctl --socket "$S" reexec --binary "$T/kin-hang" >"$T/hang.out" 2>&1 &
HPID=$!
sleep 0.3
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
drc=$?
DPID=
wait "$HPID"
[ $drc -eq 0 ] && grep -qE 'UNAVAILABLE: kin is stopping|cannot reach' "$T/hang.out" && ok stop_during_probe ||
	bad stop_during_probe "kin exit $drc; ctl: $(cat "$T/hang.out")"
[ -z "$(cat "$BASE/cells/a/cgroup.procs" 2>/dev/null)" ] && ok stops_clean || bad stops_clean "processes left"
clean_log "$T/kin.log" && ok no_sanitizer_reports || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
