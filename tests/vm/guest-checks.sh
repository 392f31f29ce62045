# Runs inside the guest as kin's workload (busybox sh): each check prints
# "CHECK NAME ok" or "CHECK NAME FAIL why"; the host reads the console.
# Ends with a poweroff request to PID 1 (SIGUSR2 in kin's signal table).
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
bb=/usr/bin/busybox
check() { # check NAME CMD...
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then echo "CHECK $name ok"; else echo "CHECK $name FAIL $(echo "$out" | $bb tr '\n' ' ' | $bb cut -c1-300)"; fi
}
has() { $bb grep -q -- "$2" "$1"; }
# kin is ready before its late boot (network, most modules) ends: checks on
# those wait for it, at most 30 s.
eventually() {
	local i
	for i in $($bb seq 300); do "$@" >/dev/null 2>&1 && return 0; $bb sleep 0.1; done
	"$@"
}

check pid1_is_kin has /proc/1/comm init
check mounts sh -c "for m in ' /proc proc' ' /sys sysfs' ' /dev devtmpfs' ' /dev/pts devpts' ' /run tmpfs' ' /sys/fs/cgroup cgroup2'; do $bb grep -q \"\$m \" /proc/mounts || { echo missing \$m; exit 1; }; done"
check cgroup_controllers sh -c "for c in cpu memory pids io cpuset; do $bb grep -qw \$c /sys/fs/cgroup/cgroup.subtree_control || { echo \$c not enabled; cat /sys/fs/cgroup/cgroup.subtree_control; exit 1; }; done"
check modules_loaded eventually sh -c "for m in virtio_net virtio_console vsock vmw_vsock_virtio_transport vsock_loopback; do $bb grep -q \"^\$m \" /proc/modules || { echo \$m not loaded; exit 1; }; done"
check eth0_address eventually sh -c "$bb ip -4 addr show eth0 | $bb grep -q 'inet 10.0.2.15/24' && $bb ip route | $bb grep -q 'default via 10.0.2.2'"
check hostname sh -c "[ \"\$($bb hostname)\" = kin ]"
check rpc_unix_health kin ctl health
check rpc_version_role sh -c "kin ctl -o json version | $bb grep -q '\"role\": *\"machine\"'"
check rpc_version_kernel sh -c "kin ctl -o json version | $bb grep -q \"\$($bb uname -r)\""
check rpc_vsock_loopback eventually kin ctl --connect vsock:1:1024 health
check rpc_socket_mode sh -c "[ \"\$($bb stat -c %a /run/kin/kin.sock)\" = 600 ]"
check orphans_reaped sh -c "for i in 1 2 3 4 5; do ($bb sleep 0.2 &); done; $bb sleep 1; ! $bb grep -q '^State:.*Z' /proc/[0-9]*/status"
$bb sync
kill -USR2 1
