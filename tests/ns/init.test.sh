#!/usr/bin/env bash
# Namespace tests of init: the real kin binary as PID 1 of new PID+mount
# namespaces (and as a subreaper daemon), driven from the host.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin init
in_ns() { unshare --pid --mount --fork --mount-proc "$KIN" init "$@"; }

t_exit_status() {
	in_ns -- sh -c 'exit 7' >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 7 ] && ok exit_status || bad exit_status "exit $rc, want 7"
}

t_exit_signal() {
	in_ns -- sh -c 'kill -KILL $$' >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 137 ] || { bad exit_signal "SIGKILL: exit $rc, want 137"; return; }
	in_ns -- sh -c 'kill -SEGV $$' >"$T/out" 2>&1; rc=$?
	[ $rc -eq 139 ] && ok exit_signal || bad exit_signal "SIGSEGV: exit $rc, want 139"
}

t_exec_failure() {
	in_ns -- /nonexistent/binary >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 127 ] && grep -q "cannot run '/nonexistent/binary': No such file" "$T/out" &&
		ok exec_failure || bad exec_failure "exit $rc, want 127 and a message naming the binary"
}

t_orphans() {
	# Parents that exit before and after their children; the helper itself
	# checks /proc for zombies while kin is PID 1, and kin counts what it reaped.
	in_ns --log-level info -- "$HELPER" orphans 100 >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 0 ] || { bad orphans "zombies left or helper failed (exit $rc)"; return; }
	grep -q "stopped; 200 orphans reaped" "$T/out" && ok orphans ||
		bad orphans "kin did not report 200 orphans reaped"
}

t_churn_1000() {
	in_ns --log-level info -- "$HELPER" churn 1000 >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 0 ] || { bad churn_1000 "zombies left (exit $rc)"; return; }
	local n
	n=$(sed -nE 's/.*stopped; ([0-9]+) orphans reaped.*/\1/p' "$T/out")
	[ "${n:-0}" -ge 1000 ] && ok churn_1000 || bad churn_1000 "reaped ${n:-0}, want >= 1000"
}

t_no_zombie_after_workload() {
	# Orphans still running when the workload exits are stopped and reaped.
	in_ns --grace 2s -- sh -c 'sleep 30 & sleep 30 & (sleep 30 &); exit 0' >"$T/out" 2>&1
	local rc=$?
	[ $rc -eq 0 ] && ok stop_leftovers_on_exit || bad stop_leftovers_on_exit "exit $rc"
}

t_signal_forwarding() {
	rm -f "$T/log"
	ns_start "$T/out" "$KIN" init -- "$HELPER" siglog "$T/log"
	wait_for "grep -q ready '$T/log' 2>/dev/null" || { bad signal_forwarding "workload never ready"; kill -9 $NS_UNSHARE; return; }
	for s in HUP USR1 USR2 WINCH INT; do
		kill -s $s "$NS_PID1"
		wait_for "grep -q '^$s\$' '$T/log'" 100 || break
	done
	kill -s TERM "$NS_PID1"
	wait $NS_UNSHARE; local rc=$?
	local got
	got=$(grep -v ready "$T/log" | tr '\n' ' ')
	[ "$got" = "HUP USR1 USR2 WINCH INT TERM " ] && [ $rc -eq 0 ] && ok signal_forwarding ||
		bad signal_forwarding "got '$got' exit $rc"
}

t_sigterm_graceful() {
	# The workload handles SIGTERM (siglog exits 0): stop is quick and clean.
	rm -f "$T/log"
	ns_start "$T/out" "$KIN" init --grace 20s -- "$HELPER" siglog "$T/log"
	wait_for "grep -q ready '$T/log' 2>/dev/null" || { bad sigterm_graceful "not ready"; kill -9 $NS_UNSHARE; return; }
	local t0=$SECONDS
	kill -TERM "$NS_PID1"
	wait $NS_UNSHARE; local rc=$?
	[ $rc -eq 0 ] && [ $((SECONDS - t0)) -lt 15 ] && ok sigterm_graceful ||
		bad sigterm_graceful "exit $rc after $((SECONDS - t0)) s (grace 20 s should not be used up)"
}

t_sigterm_ignored_killed() {
	rm -f "$T/ready"
	ns_start "$T/out" "$KIN" init --log-level info --grace 1s -- "$HELPER" ignore-term "$T/ready"
	wait_for "[ -e '$T/ready' ]" || { bad sigterm_ignored_killed "not ready"; kill -9 $NS_UNSHARE; return; }
	kill -TERM "$NS_PID1"
	wait $NS_UNSHARE; local rc=$?
	[ $rc -eq 137 ] && grep -q "grace period over" "$T/out" && ok sigterm_ignored_killed ||
		bad sigterm_ignored_killed "exit $rc, want 137 (SIGKILL after grace)"
}

t_daemon_subreaper() {
	# Not PID 1: kin is a subreaper; orphans come to it, and SIGTERM stops
	# the whole tree below it, grandchildren included.
	rm -f "$T/ready"
	"$KIN" init --log-level info --grace 1s -- sh -c "(sleep 300 &); exec $HELPER ignore-term $T/ready" >"$T/out" 2>&1 &
	local kpid=$!
	wait_for "[ -e '$T/ready' ]" || { bad daemon_subreaper "not ready"; kill -9 $kpid; return; }
	local orphan
	orphan=$(pgrep -P "$kpid" -x sleep)
	[ -n "$orphan" ] || { bad daemon_subreaper "orphaned sleep was not reparented to kin"; kill -9 $kpid; return; }
	kill -TERM $kpid
	wait $kpid; local rc=$?
	if [ $rc -eq 137 ] && ! kill -0 "$orphan" 2>/dev/null && grep -q "role daemon" "$T/out"; then
		ok daemon_subreaper
	else
		bad daemon_subreaper "exit $rc; orphan $orphan alive: $(kill -0 $orphan 2>/dev/null && echo yes || echo no)"
		kill -9 "$orphan" 2>/dev/null
	fi
}

t_daemon_no_workload() {
	"$KIN" init --log-level info >"$T/out" 2>&1 &
	local kpid=$!
	wait_for "grep -q ready '$T/out'" || { bad daemon_no_workload "not ready"; kill -9 $kpid; return; }
	kill -HUP $kpid # ignored in this role
	sleep 0.1
	kill -0 $kpid 2>/dev/null || { bad daemon_no_workload "SIGHUP killed kin"; return; }
	kill -TERM $kpid
	wait $kpid; local rc=$?
	[ $rc -eq 0 ] && ok daemon_no_workload || bad daemon_no_workload "exit $rc, want 0"
}

t_zone_role() {
	unshare --pid --mount --uts --fork --mount-proc "$KIN" init --log-level debug --zone pod1 \
		--hostname pod1 -- sh -c 'hostname' >"$T/out" 2>&1; local rc=$?
	[ $rc -eq 0 ] && grep -q "role zone" "$T/out" && grep -qx pod1 "$T/out" && ok zone_role ||
		bad zone_role "exit $rc; want role zone and hostname pod1"
}

t_bad_flags() {
	local rc
	"$KIN" init --frobnicate >"$T/out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q "unknown option '--frobnicate'" "$T/out" || { bad bad_flags "unknown flag: exit $rc"; return; }
	"$KIN" init --grace soon >"$T/out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q -- "--grace 'soon' is not valid" "$T/out" || { bad bad_flags "bad grace: exit $rc"; return; }
	"$KIN" init stray >"$T/out" 2>&1; rc=$?
	[ $rc -eq 2 ] || { bad bad_flags "stray argument: exit $rc"; return; }
	"$KIN" frobnicate >"$T/out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q "unknown command 'frobnicate'" "$T/out" || { bad bad_flags "unknown command: exit $rc"; return; }
	"$KIN" init --log-level >"$T/out" 2>&1; rc=$?
	[ $rc -eq 2 ] && grep -q "needs a value" "$T/out" && ok bad_flags || bad bad_flags "missing value: exit $rc"
}

t_bad_cmdline() {
	# Malformed kin.* options are named and ignored; kin still does its job.
	printf 'root=/dev/vda kin.grace=soon kin.nope=1 kin.log "kin.hostname=has space" kin.panic=explode %s\n' \
		"kin.hostname=$(head -c 5000 /dev/zero | tr '\0' a)" >"$T/cmdline"
	head -c 3000 /dev/urandom >>"$T/cmdline"
	in_ns --cmdline "$T/cmdline" -- sh -c 'exit 5' >"$T/out" 2>&1; local rc=$?
	local want=("kin.grace='soon' is not valid" "unknown option 'kin.nope'" "'kin.log' has no value"
		"kin.hostname='has space' is not valid" "kin.panic='explode' is not valid" "longer than")
	for w in "${want[@]}"; do
		grep -qF "$w" "$T/out" || { bad bad_cmdline "no message containing: $w"; return; }
	done
	[ $rc -eq 5 ] && ok bad_cmdline || bad bad_cmdline "exit $rc, want the workload's 5"
}

t_fuzzed_cmdline() {
	# Random bytes as a command line, 50 times: never a crash.
	for i in $(seq 50); do
		{ head -c $((RANDOM % 2000)) /dev/urandom; printf ' kin.log=%s kin.grace=%s' "$RANDOM" "$(head -c 8 /dev/urandom | tr -d '\0')"; } >"$T/cmdline"
		"$KIN" init --cmdline "$T/cmdline" -- true >"$T/out" 2>&1; local rc=$?
		[ $rc -eq 0 ] || { bad fuzzed_cmdline "run $i: exit $rc"; return; }
	done
	ok fuzzed_cmdline
}

t_exit_status
t_exit_signal
t_exec_failure
t_orphans
t_churn_1000
t_no_zombie_after_workload
t_signal_forwarding
t_sigterm_graceful
t_sigterm_ignored_killed
t_daemon_subreaper
t_daemon_no_workload
t_zone_role
t_bad_flags
t_bad_cmdline
t_fuzzed_cmdline

ns_suite_end
