# Shared by the namespace tests (tests/ns/*.test.sh, one suite per file, each
# run by tests/run-all.sh) and the demo: run kin as PID 1 of fresh PID+mount
# namespaces on the host, find and signal it, and count PASS/FAIL.
. tests/common.sh
set -uo pipefail
BUILD=${BUILD:-build}
KIN=${KIN:-$PWD/$BUILD/kin}
HELPER=${HELPER:-$PWD/$BUILD/ns-helper}

# ns_start OUT ARGS...: starts "unshare ... ARGS" in the background with
# output in OUT; sets NS_UNSHARE (unshare's pid) and NS_PID1 (the host pid
# of the namespace's PID 1).
ns_start() {
	local out=$1; shift
	unshare --pid --mount --fork --mount-proc "$@" >"$out" 2>&1 &
	NS_UNSHARE=$!
	NS_PID1=
	for _ in $(seq 200); do
		NS_PID1=$(cat /proc/$NS_UNSHARE/task/$NS_UNSHARE/children 2>/dev/null | awk '{print $1}')
		[ -n "$NS_PID1" ] && break
		sleep 0.01
	done
}

# ns_suite_begin NAME: scratch dir $T, counters, and a root check.
ns_suite_begin() {
	SUITE=$1 pass=0 fail=0
	T=$(mktemp -d /tmp/kin-ns.XXXXXX)
	trap 'rm -rf "$T"' EXIT
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP ns/$SUITE: needs root for namespaces"
		echo "0 passed, 0 failed"
		exit 0
	fi
}
ok() { echo "PASS ns/$SUITE/$1"; pass=$((pass + 1)); }
# bad NAME WHY: a failure, with the tail of $T/out for context.
bad() {
	echo "FAIL ns/$SUITE/$1: $2"
	fail=$((fail + 1))
	[ -f "$T/out" ] && sed 's/^/    | /' "$T/out" | tail -20
	return 0
}
# ns_tty_drive SCENARIO ARGS... -- KINCTL-ARGS...: kin ctl on a real pty
# (tests/ns/tty_client.py), its checks counted as this suite's.
ns_tty_drive() {
	local line
	while read -r line; do
		case $line in
		ok\ *) ok "${line#ok }" ;;
		bad\ *) line=${line#bad }; bad "${line%% *}" "${line#* }" ;;
		*) bad tty_driver "$line" ;;
		esac
	done < <(timeout 60 python3 tests/ns/tty_client.py "$@" 2>&1)
}
ns_suite_end() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

# ns_skip WHY: ends the suite as skipped, saying why.
ns_skip() {
	echo "SKIP ns/$SUITE: $1"
	echo "0 passed, 0 failed"
	exit 0
}
# ns_need_cgroup2: CG is where cgroup2 is mounted, or the suite is skipped.
ns_need_cgroup2() {
	CG=$(cgroup2_mount)
	[ -n "$CG" ] || ns_skip "no cgroup2 mount in /proc/self/mountinfo"
}
# ns_need_fuse: a FUSE mount nobody serves is how the suites make a setup
# that really hangs; without /dev/fuse the suite is skipped.
ns_need_fuse() {
	if [ ! -c /dev/fuse ] || ! grep -qw fuse /proc/filesystems; then
		ns_skip "no FUSE (/dev/fuse) to make a setup that hangs"
	fi
}
# veths_remove PREFIX: deletes the links whose names start with PREFIX
# (a zone's host-side veth ends are kz<kin pid>.<n>).
veths_remove() {
	for l in $(ip -o link show 2>/dev/null | awk -F': ' -v p="$1" 'index($2, p) == 1 {print $2}' | sed 's/@.*//'); do
		ip link del "$l" 2>/dev/null
	done
}
# clean_log FILE: no sanitizer report in FILE (SANITIZE=1 builds).
clean_log() { ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$1"; }
# ns_busybox_root DIR [BINARY...]: a root for zones that run executables:
# a static busybox at DIR/bin/busybox, DIR/tmp, and the loader and
# libraries of kin and of each BINARY that is dynamically linked
# (SANITIZE=1 builds).
ns_busybox_root() {
	local dir=$1 bin lib
	shift
	mkdir -p "$dir/bin" "$dir/tmp"
	cp /bin/busybox "$dir/bin/busybox"
	for bin in "$KIN" "$@"; do
		ldd "$bin" >/dev/null 2>&1 || continue
		for lib in $(ldd "$bin" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}'); do
			cp --parents -L "$lib" "$dir"
		done
	done
	[ -d "$dir/usr/lib64" ] && ln -s usr/lib64 "$dir/lib64" 2>/dev/null
	[ -d "$dir/usr/lib" ] && ln -s usr/lib "$dir/lib" 2>/dev/null
	return 0
}
# Talking to the daemon kin a suite runs on $S: kc runs `kin ctl` with the
# output in $T/out and the exit code in $rc; out_has greps that output;
# serving is true once kin answers Health. (A suite may define its own.)
kc() { "$KIN" ctl --socket "$S" "$@" >"$T/out" 2>&1; rc=$?; }
out_has() { grep -qE -- "$1" "$T/out"; }
serving() { [ "$("$KIN" ctl --socket "$S" health 2>&1)" = SERVING ]; }
# ns_daemon_start LOG ARGS...: `kin init ARGS...` moved into the cgroup
# $BASE first, its output appended to LOG; DPID is its pid; returns once
# it serves (or after 6 s). It inherits no fd but its stdio (whatever
# runs the suite may hold others open): its fds are all its own.
ns_daemon_start() {
	local log=$1
	shift
	mkdir -p "$BASE"
	(
		for f in /proc/$BASHPID/fd/*; do
			n=${f##*/}
			[ "$n" -gt 2 ] && eval "exec $n>&-" # (no redirection here: bash keeps its own copies above 9)
		done
		exec sh -c "echo \$\$ >'$BASE/cgroup.procs' && exec \"\$0\" init \"\$@\"" "$KIN" "$@"
	) >>"$log" 2>&1 &
	DPID=$!
	wait_for serving 300
}
# ns_fds: the daemon's fds (kin_fds).
ns_fds() { kin_fds "$DPID"; }
# ns_fds_back FILE: true once the daemon holds no more fds than the list
# FILE (ns_fds before); a re-exec'd kin keeps its fallback's timer 5 s, so
# this waits up to 7 s. Otherwise prints what it holds that FILE has not.
ns_fds_back() {
	local i
	for i in $(seq 70); do
		[ "$(ns_fds | wc -l)" -le "$(wc -l <"$1")" ] && return 0
		sleep 0.1
	done
	diff <(cut -d' ' -f2- "$1" | sed 's/:\[[0-9]*\]$//' | sort) <(ns_fds | cut -d' ' -f2- | sed 's/:\[[0-9]*\]$//' | sort) |
		sed -n 's/^> //p' | sort | uniq -c | tr '\n' ' '
	return 1
}
