# Runs inside the guest from the root disk (it is not in the initramfs, so
# running at all means the workload crossed the switch to root=). Each check
# prints "CHECK NAME ok" or "CHECK NAME FAIL why"; ends with a poweroff
# request to PID 1 (SIGUSR2).
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
bb=/usr/bin/busybox
check() { # check NAME CMD...
	local name=$1; shift
	local out
	if out=$("$@" 2>&1); then echo "CHECK $name ok"; else echo "CHECK $name FAIL $(echo "$out" | $bb tr '\n' ' ' | $bb cut -c1-300)"; fi
}

echo "CHECK workload_on_disk ok"
check root_is_ext4 sh -c "$bb awk '\$2 == \"/\" {t=\$3} END {print t; exit t != \"ext4\"}' /proc/mounts"
check root_is_vda sh -c "$bb grep -q '^/dev/vda / ext4 ' /proc/mounts || { $bb cat /proc/mounts; exit 1; }"
check root_writable sh -c "echo x > /root/probe && $bb rm /root/probe"
check initramfs_gone sh -c "! $bb grep -q '^rootfs ' /proc/mounts || [ -z \"\$($bb ls /.kin-newroot 2>/dev/null)\" ]"
check pid1_is_kin sh -c "[ \"\$($bb cat /proc/1/comm)\" = init ]"
check api_mounts sh -c "for m in ' /proc proc' ' /sys sysfs' ' /dev devtmpfs' ' /run tmpfs' ' /sys/fs/cgroup cgroup2'; do $bb grep -q \"\$m \" /proc/mounts || { echo missing \$m; exit 1; }; done"
check rpc_role_machine sh -c "kin ctl -o json version | $bb grep -q '\"role\": *\"machine\"'"
check rpc_pid_1 sh -c "kin ctl -o json version | $bb grep -q '\"pid\": *1[,}]'"
$bb sync
kill -USR2 1
