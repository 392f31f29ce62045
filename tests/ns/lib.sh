# Shared by the namespace tests and the demo: run kin as PID 1 of fresh
# PID+mount namespaces on the host, and helpers to find and signal it.
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

# wait_for COND_CMD [TRIES]: polls a condition every 20 ms (behaviour, not timing).
wait_for() {
	local tries=${2:-500}
	for _ in $(seq "$tries"); do
		eval "$1" && return 0
		sleep 0.02
	done
	return 1
}
