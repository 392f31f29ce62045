# Shared by the VM suites (tests/vm/*.test.sh): the guest kernel from kin's
# kernel cache (fetched once by `kin image kernel`), images made by
# `kin image build`, guests booted under QEMU (TCG where KVM is unusable).
. tests/common.sh
BUILD=${BUILD:-build}
KIN=${KIN:-$PWD/$BUILD/kin}

# vm_kernel: prints the cached kernel's path, fetching it the first time.
vm_kernel() {
	"$KIN" image kernel 2>/dev/null | tail -1
}

# vm_suite_begin NAME: like ns_suite_begin, and SKIP (with the reason) when
# the machine cannot boot a guest at all.
vm_suite_begin() {
	SUITE=$1 pass=0 fail=0
	T=$(mktemp -d /tmp/kin-vm.XXXXXX)
	trap 'rm -rf "$T"' EXIT
	local why=""
	[ "$(id -u)" -eq 0 ] || why="needs root"
	command -v qemu-system-x86_64 >/dev/null || why="qemu-system-x86_64 is not installed"
	if [ -z "$why" ]; then
		KERNEL=$(vm_kernel)
		[ -f "$KERNEL" ] || why="no guest kernel (kin image kernel failed)"
	fi
	if [ -n "$why" ]; then
		echo "SKIP vm/$SUITE: $why"
		echo "0 passed, 0 failed"
		exit 0
	fi
}
ok() { echo "PASS vm/$SUITE/$1"; pass=$((pass + 1)); }
bad() {
	echo "FAIL vm/$SUITE/$1: $2"
	fail=$((fail + 1))
	[ -n "${3:-}" ] && [ -f "$3" ] && sed 's/^/    | /' "$3" | tail -25
	return 0
}
vm_suite_end() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

# host_kin_start TAG [KIN-INIT-FLAGS...]: a host kin daemon on socket $S with
# its VMs under $T/vm, in a cgroup of its own (BASE, under the cgroup2
# mount) when one can be made, so its cells are its own. Sets HOST (its
# pid); at exit it is stopped, BASE removed and $T deleted. Flags must not
# hold blanks.
host_kin_start() {
	local tag=$1
	shift
	local cg
	cg=$(cgroup2_mount)
	BASE=
	if [ -n "$cg" ] && mkdir "$cg/kin-$tag-$$" 2>/dev/null; then BASE=$cg/kin-$tag-$$; fi
	sh -c "${BASE:+echo \$\$ >'$BASE/cgroup.procs' && }exec '$KIN' init --log-level debug --grace 2s --socket '$S' --vm-dir '$T/vm' $*" \
		>"$T/host.log" 2>&1 &
	HOST=$!
	trap host_kin_cleanup EXIT
	for _ in $(seq 100); do [ -S "$S" ] && break; sleep 0.05; done
}
# host_kin_successor [KIN-INIT-FLAGS...]: the host kin again once it was
# killed, as host_kin_start made it, in the leaf the dead one made for
# itself (its base has controllers enabled, so it takes no process; kin
# takes the leaf's parent as its base). Sets HOST; returns once it answers
# (or after 5 s).
host_kin_successor() {
	sh -c "echo \$\$ >'$BASE/init/cgroup.procs' && exec '$KIN' init --log-level debug --grace 2s --socket '$S' --vm-dir '$T/vm' $*" \
		>>"$T/host.log" 2>&1 &
	HOST=$!
	for _ in $(seq 100); do "$KIN" ctl --socket "$S" health >/dev/null 2>&1 && break; sleep 0.05; done
}
host_kin_cleanup() {
	kill -TERM "$HOST" 2>/dev/null
	wait "$HOST" 2>/dev/null
	# What a failed check left (a keeper, a VMM of a killed kin) goes too.
	[ -n "$BASE" ] && [ -e "$BASE/cgroup.kill" ] && echo 1 >"$BASE/cgroup.kill" 2>/dev/null && sleep 0.2
	[ -n "$BASE" ] && find "$BASE" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -rf "$T"
}
