# Shared by the VM suites (tests/vm/*.test.sh): the guest kernel from kin's
# kernel cache (fetched once by `kin image kernel`), images made by
# `kin image build`, guests booted under QEMU (TCG where KVM is unusable).
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
