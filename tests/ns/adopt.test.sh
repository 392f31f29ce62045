#!/usr/bin/env bash
# Adoption after a crash (docs/reexec.md "After a crash"): a daemon kin killed
# with SIGKILL, started again on the same --state-dir, adopts what the dead
# one ran — its cells, its executables with their restart policies, their
# processes (same pids; an end is seen, its status unknown), their stdin
# and stdout pipes — and kills and removes, with a log line naming it,
# every cell it cannot adopt (no record of it; a zone's or a VM's it has
# no zone or VM record of), so every name is
# usable again. One kin per state directory; a state file that does not
# read is named and nothing is adopted, and kin serves.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin adopt

ns_need_cgroup2
TOP=kin-adopt-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	[ -n "${D2PID:-}" ] && kill -KILL "$D2PID" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
SD=$T/state
BASE=$CG/$TOP/d
CELLS=$BASE/cells
mkdir -p "$BASE"
# daemon_start: kin init as a daemon in $BASE with its state in $SD.
daemon_start() { ns_daemon_start "$T/kin.log" --log-level debug --grace 2s --socket "$S" --state-dir "$SD"; }
field() { kc -o json exec status "$1" "$2"; sed -n "s/.*\"$3\":\"\{0,1\}\([a-z0-9]*\).*/\1/p" "$T/out"; }
# gone PID: ended (a zombie nobody has reaped yet counts: a killed kin's
# children go to whoever reaps for it)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(sed -E 's/.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
log_has() { grep -qE -- "$1" "$T/kin.log"; }

daemon_start
serving && ok daemon_serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }

kc cell create a && kc cell create a/b && kc cell create vms && kc cell create vms/x &&
	kc cell create zones && kc cell create zones/z &&
	kc exec start --restart on-failure a sl -- sleep 100000 &&
	kc exec start --restart on-failure a gone -- sleep 100000 &&
	kc exec start --stdin a/b echo -- sh -c 'while read -r l; do echo "got $l"; done' &&
	kc exec start a done -- sh -c 'exit 4' &&
	kc exec start --stdin --log-size 64K a burst -- sh -c 'read -r n; seq 1 "$n"' &&
	kc exec start a ticker -- sh -c 'i=0; while :; do i=$((i+1)); echo "t$i"; sleep 0.01; done' &&
	kc exec start vms/x vmm -- sleep 100000 &&
	kc exec start zones/z zk -- sleep 100000 || { bad setup "$(cat "$T/out")"; exit 1; }
sl=$(field a sl pid)
gone=$(field a gone pid)
echo=$(field a/b echo pid)
ticker=$(field a ticker pid)
vmm=$(field vms/x vmm pid)
zk=$(field zones/z zk pid)
wait_for "[ -s '$SD/state' ] && [ \"\$(cat '$CELLS/a/cgroup.procs' | wc -l)\" -ge 3 ]" 100
sleep 0.1 # the state is rewritten within 20 ms of the last change

kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
DPID=
[ -s "$SD/state" ] && kill -0 "$sl" && ok state_left_after_sigkill || bad state_left_after_sigkill "no state, or sl gone"
# While no kin runs: one process ends, and a cgroup nobody recorded appears.
kill -KILL "$gone"
mkdir "$CELLS/foreign"
sh -c "echo \$\$ >'$CELLS/foreign/cgroup.procs' && exec sleep 100000" &
FOREIGN=$!
sleep 0.2

daemon_start
serving && ok successor_serving || { bad successor_serving "$(tail -5 "$T/kin.log")"; exit 1; }
[ "$(field a sl pid)" = "$sl" ] && [ "$(field a sl state)" = running ] &&
	log_has "adopt: exec \"a/sl\": pid $sl adopted" && ok running_adopted_same_pid ||
	bad running_adopted_same_pid "pid $(field a sl pid), state $(field a sl state)"
kc exec status a done
out_has 'ended: +exit status 4' && ok ended_record_kept || bad ended_record_kept "$(cat "$T/out")"
# gone ended unseen: status unknown, and on-failure restarts it.
log_has 'adopt: exec "a/gone": pid [0-9]+ has ended meanwhile; its status is unknown' &&
	wait_for "[ \"\$(field a gone state)\" = running ]" 100 && [ "$(field a gone restarts)" = 1 ] &&
	ok ended_meanwhile_restarts || bad ended_meanwhile_restarts "$(cat "$T/out")"

# The adopted process's end is seen (not kin's child: status unknown); its
# policy goes on.
kill -KILL "$sl"
wait_for "[ \"\$(field a sl restarts)\" = 1 ]" 100
kc exec status a sl
[ "$(field a sl restarts)" = 1 ] && [ "$(field a sl pid)" != "$sl" ] && ok adopted_end_seen_and_restarted ||
	bad adopted_end_seen_and_restarted "$(cat "$T/out")"

# stdin and stdout of an adopted process: opened again through /proc.
echo hello | "$KIN" ctl --socket "$S" exec stdin a/b echo >/dev/null 2>&1
wait_for "\"$KIN\" ctl --socket '$S' exec logs a/b echo | grep -qx 'got hello'" 100 &&
	[ "$(field a/b echo pid)" = "$echo" ] && ok adopted_pipes_reopened ||
	bad adopted_pipes_reopened "logs: $("$KIN" ctl --socket "$S" exec logs a/b echo 2>&1)"

# An adopted executable's log holds as much as its spec says (64K here),
# not less: 3000 lines (13893 bytes) printed after the adoption are all kept.
echo 3000 | "$KIN" ctl --socket "$S" exec stdin a burst >/dev/null 2>&1
wait_for "[ \"\$(field a burst state)\" = exited ]" 200
"$KIN" ctl --socket "$S" exec logs a burst >"$T/burst" 2>&1
seq 1 3000 | cmp -s - "$T/burst" && ok adopted_log_keeps_its_size ||
	bad adopted_log_keeps_its_size "$(wc -l <"$T/burst") lines, first: $(head -1 "$T/burst")"

# A workload that printed on while no kin ran: neither killed by SIGPIPE
# nor blocked (the keeper held its pipe); its lines since are all there.
sleep 0.3
"$KIN" ctl --socket "$S" exec logs a ticker >"$T/ticker"
first=$(head -1 "$T/ticker" | tr -d t)
last=$(tail -1 "$T/ticker" | tr -d t)
[ "$(field a ticker pid)" = "$ticker" ] && [ -n "$first" ] && [ "$last" -gt "$first" ] &&
	[ "$(seq "$first" "$last" | sed 's/^/t/')" = "$(cat "$T/ticker")" ] &&
	ok printer_kept_its_pipe ||
	bad printer_kept_its_pipe "pid $(field a ticker pid) vs $ticker; lines $first..$last: $(head -3 "$T/ticker")"

# What cannot be adopted is killed and removed, named; the names are free:
# a cell of no record, one under zones/ that no zone of the record names
# (tests/ns/adopt-zones.test.sh adopts real zones), one under vms/ that no
# VM of the record names.
wait_for "gone $vmm && gone $zk && gone $FOREIGN && [ ! -d '$CELLS/foreign' ] && [ ! -d '$CELLS/zones' ] && [ ! -d '$CELLS/vms/x' ]" 250
log_has 'cell "foreign", left by an earlier kin, is not adopted \(no record of it\): its processes are killed and it is removed' &&
	log_has 'adopt: cell zones/z, left by the previous kin, is no zone it ran that could be adopted' &&
	log_has 'adopt: cell vms/x, left by the previous kin and named by no VM record' &&
	log_has 'removed cell "foreign", left by an earlier kin' && [ ! -d "$CELLS/foreign" ] &&
	gone "$vmm" && ok unadoptable_removed || bad unadoptable_removed "$(grep 'cells:\|adopt:' "$T/kin.log")"
wait "$FOREIGN" 2>/dev/null
kc cell create foreign && kc cell create zones && kc cell create zones/z && kc cell create vms/x && ok names_reusable ||
	bad names_reusable "$(cat "$T/out")"

# A re-exec carries adopted processes (they stay watched, not children).
sl2=$(field a sl pid)
kc reexec
[ $rc -eq 0 ] && [ "$(field a sl pid)" = "$sl2" ] && ok reexec_after_adoption || bad reexec_after_adoption "$(cat "$T/out")"

# One kin per state directory: a second one says so and keeps none.
mkdir -p "$CG/$TOP/d2"
sh -c "echo \$\$ >'$CG/$TOP/d2/cgroup.procs' && exec '$KIN' init --socket '$T/k2.sock' --state-dir '$SD'" >"$T/kin2.log" 2>&1 &
D2PID=$!
wait_for "grep -q 'ready:' '$T/kin2.log'" 250
grep -q "state: $SD is another running kin's (it holds its lock); this kin keeps no state there" "$T/kin2.log" &&
	serving && ok one_kin_per_state_dir || bad one_kin_per_state_dir "$(cat "$T/kin2.log")"
kill -TERM "$D2PID"
wait "$D2PID" 2>/dev/null
D2PID=

# Killed again, with a state that does not read: named, nothing adopted,
# everything the dead kin ran removed.
kc exec stop --grace 100ms a/b echo
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
sl3=$(cat "$CELLS/a/cgroup.procs" | head -1)
head -c 300 /dev/urandom >"$SD/state"
daemon_start
serving && log_has "state: $SD/state does not read; nothing adopted" &&
	wait_for "[ ! -d '$CELLS/a' ]" 250 && gone "$sl3" && ok bad_state_refused ||
	bad bad_state_refused "$(grep -E 'state:|cells:' "$T/kin.log" | tail -5)"
# A state file others may write is not trusted.
kill -KILL "$DPID"
wait "$DPID" 2>/dev/null
printf 'KINSTATE\001\0\0\0\0\0\0\0' >"$SD/state"
chmod 666 "$SD/state"
daemon_start
serving && log_has "state: $SD/state is not root's own file; nothing adopted" && ok writable_state_refused ||
	bad writable_state_refused "$(grep -E 'state:' "$T/kin.log" | tail -3)"

# A clean stop leaves nothing to adopt.
kc exec start a last -- sleep 100000
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null
DPID=
[ ! -e "$SD/state" ] && [ -z "$(find "$CELLS" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] &&
	ok clean_stop_removes_state || bad clean_stop_removes_state "$(ls "$SD")"
[ -z "$(cat "$BASE/init/cgroup.procs")" ] && ok keeper_ends_with_kin || bad keeper_ends_with_kin "$(ps -o pid,args -p "$(cat "$BASE/init/cgroup.procs" | tr '\n' ,)")"
clean_log "$T/kin.log" && ok no_sanitizer_reports || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
