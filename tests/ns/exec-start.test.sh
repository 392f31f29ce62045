#!/usr/bin/env bash
# Starting executables never stalls kin. A real setup that hangs: the
# executable's cwd is inside a FUSE mount nobody serves (/dev/fuse held
# open by a sleeping process, never read), so the child's chdir blocks in
# the kernel until it is killed. The FUSE mount lives only in a private
# mount namespace that kin init (a daemon, in a cgroup of its own on the
# host's cgroup2) runs in, so nothing else on the host can trip on it.
# While such a start hangs: Health, another start and wait, status and
# list are answered at once; a second start of the name is
# ALREADY_EXISTS; the hung start ends DEADLINE_EXCEEDED after 5 s with no
# process and no record left; setup errors still name their step; a
# client that leaves, a stop, a restart whose setup hangs and kin's own
# stop each leave nothing behind (fds, processes, cgroups).
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin exec-start

ns_need_cgroup2
ns_need_fuse
TOP=kin-xs-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	[ -n "${HOLDER:-}" ] && kill -KILL "$HOLDER" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
BASE=$CG/$TOP/d
CELLS=$BASE/cells
HANG=$T/hang # the FUSE mount (kin's mount namespace only)
mkdir -p "$HANG" "$T/real/sub"

# kin init in a private mount namespace where $HANG is a FUSE mount whose
# /dev/fuse end is held, unread, by a sleep ($HOLDER): any lookup below it
# blocks until the process is killed.
unshare --mount --propagation private sh -c "
	exec 7<>/dev/fuse || exit 97
	mount -i -t fuse -o fd=7,rootmode=40000,user_id=0,group_id=0 kin-hang '$HANG' || exit 98
	sleep 100000 &
	echo \$! >'$T/holder.pid'
	exec 7>&-
	mkdir -p '$BASE' && echo \$\$ >'$BASE/cgroup.procs' || exit 99
	exec '$KIN' init --log-level debug --grace 2s --socket '$S'" >"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250
HOLDER=$(cat "$T/holder.pid" 2>/dev/null)

now_ms() { echo $(($(date +%s%N) / 1000000)); }
fds() { ls /proc/"$DPID"/fd | wc -l; }
# state CELL NAME: the executable's state, "" if unknown.
state() { "$KIN" ctl --socket "$S" exec status "$1" "$2" 2>/dev/null | awk '$1 == "state:" {print $2}'; }
# procs CELL: processes in the cell's cgroup.
procs() { cat "$CELLS/$1/cgroup.procs" 2>/dev/null | wc -l; }
# hung_start CELL NAME OUT [ARGS...]: a start whose setup hangs, in the
# background (pid in $HPID), once kin says it is starting.
hung_start() {
	local cell=$1 name=$2 out=$3
	shift 3
	"$KIN" ctl --socket "$S" --timeout 20s exec start "$@" --cwd "$HANG/sub" "$cell" "$name" \
		-- /bin/true >"$out" 2>&1 &
	HPID=$!
	wait_for "[ \"\$(state $cell $name)\" = starting ]" 100
}

serving && [ -n "$HOLDER" ] && grep -qE " $HANG .* - fuse " /proc/"$DPID"/mountinfo &&
	ok daemon_with_a_hanging_mount || {
	bad daemon_with_a_hanging_mount "no SERVING, or no FUSE mount in kin's namespace"
	cat "$T/kin.log"
	exit 1
}
kc cell create c

t_hang_keeps_serving() {
	local t0 t1 fails=""
	t0=$(now_ms)
	hung_start c hung "$T/hung.out" || { bad hang_keeps_serving "never listed as starting"; return; }
	# Everything below happens while that child hangs in its setup.
	local h0 h1
	h0=$(now_ms)
	for _ in 1 2 3 4 5; do serving || fails="$fails health"; done
	kc exec start c quick -- sh -c 'exit 3'
	[ $rc -eq 0 ] || fails="$fails start-quick($rc)"
	kc exec wait c quick
	[ $rc -eq 3 ] || fails="$fails wait-quick($rc)"
	kc exec list c
	out_has '^c +hung +starting ' || fails="$fails list"
	h1=$(now_ms)
	[ $((h1 - h0)) -lt 2000 ] || fails="$fails slow($((h1 - h0))ms)"
	kill -0 "$HPID" 2>/dev/null || fails="$fails answered-early"
	[ -z "$fails" ] && ok hang_keeps_serving || bad hang_keeps_serving "while a setup hangs:$fails"

	kc exec start c hung -- /bin/true
	[ $rc -eq 1 ] && out_has 'ALREADY_EXISTS: exec "c/hung" is already starting' &&
		ok second_start_already_exists || bad second_start_already_exists "exit $rc"

	wait "$HPID"
	local hrc=$?
	t1=$(now_ms)
	cp "$T/hung.out" "$T/out"
	[ $hrc -eq 1 ] && out_has 'DEADLINE_EXCEEDED: exec "c/hung": setup did not reach execve within 5000 ms' &&
		[ $((t1 - t0)) -ge 4500 ] && [ $((t1 - t0)) -lt 12000 ] &&
		ok hung_start_times_out || bad hung_start_times_out "exit $hrc after $((t1 - t0)) ms"
	kc exec status c hung
	[ $rc -eq 1 ] && out_has 'NOT_FOUND' && [ "$(procs c)" -eq 0 ] && serving &&
		ok timeout_leaves_nothing || bad timeout_leaves_nothing "status exit $rc, $(procs c) processes"
}

t_setup_errors_name_the_step() {
	local fails=""
	kc exec start c nobin -- /nonexistent/binary
	[ $rc -eq 1 ] && out_has 'exec "c/nobin": execve: No such file or directory' || fails="$fails execve($rc)"
	kc exec start --cwd /nonexistent c nocwd -- /bin/true
	[ $rc -eq 1 ] && out_has 'exec "c/nocwd": chdir: No such file or directory' || fails="$fails chdir($rc)"
	kc exec start --root "$T/nonexistent" c badroot -- /bin/true
	[ $rc -eq 1 ] && out_has 'exec "c/badroot": bind root: No such file or directory' || fails="$fails root($rc)"
	mkfifo "$T/fifo"
	kc exec start --seccomp "$T/fifo" c fifo -- /bin/true
	[ $rc -eq 1 ] && out_has 'seccomp profile .*fifo: not a regular file' || fails="$fails seccomp-fifo($rc)"
	kc exec list c
	out_has 'nobin|nocwd|badroot|fifo' && fails="$fails records-left"
	[ "$(procs c)" -eq 0 ] || fails="$fails processes-left"
	[ -z "$fails" ] && serving && ok setup_errors_name_the_step || bad setup_errors_name_the_step "$fails"
}

t_client_leaves() {
	local before after
	before=$(fds)
	hung_start c gone "$T/gone.out" || { bad client_leaves "never listed as starting"; return; }
	kill -KILL "$HPID"
	wait "$HPID" 2>/dev/null
	serving || { bad client_leaves "not serving after the client left"; return; }
	# The start goes on without its client and times out as usual.
	wait_for "[ -z \"\$(state c gone)\" ]" 400
	after=$(fds)
	kc exec status c gone
	[ $rc -eq 1 ] && out_has NOT_FOUND && [ "$(procs c)" -eq 0 ] && [ "$after" -le "$before" ] &&
		ok client_leaves_no_leak || bad client_leaves_no_leak "status exit $rc, $(procs c) processes, fds $before -> $after"
}

t_stop_while_starting() {
	local s0 s1
	hung_start c stopme "$T/stop.out" || { bad stop_while_starting "never listed as starting"; return; }
	s0=$(now_ms)
	kc exec stop --grace 10s c stopme
	s1=$(now_ms)
	local src=$rc
	cp "$T/out" "$T/stop.txt"
	wait "$HPID"
	local hrc=$?
	cp "$T/stop.out" "$T/out"
	[ $src -eq 0 ] && grep -qE '^state: +exited' "$T/stop.txt" && [ $((s1 - s0)) -lt 2000 ] &&
		[ $hrc -eq 1 ] && out_has 'CANCELLED: exec "c/stopme": stopped before its setup reached execve' &&
		[ -z "$(state c stopme)" ] && [ "$(procs c)" -eq 0 ] &&
		ok stop_while_starting || bad stop_while_starting "stop exit $src in $((s1 - s0)) ms, start exit $hrc"
}

# A restart's setup hangs (its cwd is a link switched to the hung mount
# after the first run): restarts go through the same start, and kin serves
# meanwhile; a stop ends the hung restart.
t_restart_hang() {
	local fails=""
	ln -sfn "$T/real" "$T/link"
	kc exec start --restart always --backoff 50ms:50ms --cwd "$T/link/sub" c flaky -- sh -c 'sleep 0.3; exit 1'
	[ $rc -eq 0 ] || { bad restart_hang "first start exit $rc"; return; }
	ln -sfn "$HANG" "$T/link"
	wait_for "[ \"\$(state c flaky)\" = starting ]" 200 || fails="$fails never-starting"
	local h0 h1
	h0=$(now_ms)
	serving || fails="$fails health"
	kc exec start c quick2 -- true
	[ $rc -eq 0 ] || fails="$fails start-quick($rc)"
	h1=$(now_ms)
	[ $((h1 - h0)) -lt 2000 ] || fails="$fails slow($((h1 - h0))ms)"
	# After its deadline the hung restart counts as a run that exited 127,
	# and the policy tries again (and hangs again).
	wait_for "$KIN ctl --socket $S exec status c flaky | grep -qE '^restarts: +[2-9]'" 500 ||
		fails="$fails no-second-restart"
	grep -q 'exec "c/flaky": setup did not reach execve within 5000 ms' "$T/kin.log" || fails="$fails no-log"
	kc exec stop --grace 1s c flaky
	[ $rc -eq 0 ] || fails="$fails stop($rc)"
	[ "$(state c flaky)" = exited ] && [ "$(procs c)" -eq 0 ] || fails="$fails left($(state c flaky),$(procs c))"
	[ -z "$fails" ] && ok restart_hang_does_not_block || bad restart_hang_does_not_block "$fails"
	ln -sfn "$T/real" "$T/link"
}

# kin stops with a start pending: the call ends, the child is killed and
# reaped, kin exits 0, its cgroups hold nothing.
t_kin_stop() {
	hung_start c last "$T/last.out" || { bad kin_stop_with_start_pending "never listed as starting"; return; }
	"$KIN" ctl --socket "$S" poweroff >/dev/null 2>&1
	local krc=0
	wait_for "! kill -0 $DPID 2>/dev/null" 500
	wait "$DPID"
	krc=$?
	wait "$HPID"
	local hrc=$?
	DPID=
	cp "$T/last.out" "$T/out"
	[ $krc -eq 0 ] && [ $hrc -ne 0 ] && [ "$(procs c)" -eq 0 ] &&
		[ -z "$(find "$CG/$TOP" -name cgroup.procs -exec cat {} + 2>/dev/null)" ] &&
		ok kin_stop_with_start_pending || bad kin_stop_with_start_pending "kin exit $krc, start exit $hrc"
}

t_hang_keeps_serving
t_setup_errors_name_the_step
t_client_leaves
t_stop_while_starting
t_restart_hang
t_kin_stop
clean_log "$T/kin.log" && ok no_sanitizer_report || { bad no_sanitizer_report "see the log"; grep -E 'Sanitizer|runtime error' "$T/kin.log" | head; }
ns_suite_end
