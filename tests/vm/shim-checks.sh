# Runs inside the guest as kin's workload (busybox sh): containerd with
# kin's shim where cgroup2 has every controller, which this host lacks.
# Prints "CHECK NAME ok" or "CHECK NAME FAIL why"; the host reads the
# console. Ends with a poweroff request to PID 1 (SIGUSR2).
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
bb=/usr/bin/busybox
pass() { echo "CHECK $1 ok"; }
fail() { echo "CHECK $1 FAIL $(echo "$2" | $bb tr '\n' ' ' | $bb cut -c1-400)"; }
$bb mkdir -p /var/lib/containerd /run/containerd /tmp
$bb mount -t tmpfs tmpfs /var/lib/containerd
containerd --config /test/containerd.toml >/tmp/containerd.log 2>&1 &
for i in $($bb seq 300); do ctr version >/dev/null 2>&1 && break; $bb sleep 0.1; done
C="ctr -n kintest"
R="--runtime io.containerd.kin.v2"
if $C image import --all-platforms /test/bb.tar >/tmp/o 2>&1; then pass image_import
else fail image_import "$($bb cat /tmp/o) $($bb tail -3 /tmp/containerd.log)"; fi
$C events >/tmp/events 2>&1 &

# A container run through kin's shim, its output and status.
out=$($C run --rm $R bb:1 c1 /bin/sh -c 'echo hello-guest; exit 7' 2>&1)
rc=$?
[ "$rc" = 7 ] && [ "$out" = hello-guest ] && pass run_status ||
	fail run_status "rc $rc: $out $($bb tail -3 /tmp/containerd.log)"

# A memory limit is the container cell's memory.max, enforced.
$C run -d $R --memory-limit 33554432 bb:1 c2 /bin/sleep 1000 >/tmp/o 2>&1
max=$($bb cat /sys/fs/cgroup/kintest/c2/cells/zones/pod/cells/c2/memory.max 2>/dev/null)
[ "$max" = 33554432 ] && pass memory_limit_in_cell || fail memory_limit_in_cell "memory.max '$max': $($bb cat /tmp/o)"
$C t metrics c2 >/tmp/o 2>&1
$bb grep -q 'memory.usage_limit *33554432' /tmp/o && pass metrics_limit ||
	fail metrics_limit "$($bb cat /tmp/o)"
# Update: new resources become the cell's limits.
sock=$($bb sed 's|^unix://||' /run/containerd/io.containerd.runtime.v2.task/kintest/c2/address)
hostile=$($bb find / -xdev -name shim-hostile -type f 2>/dev/null | $bb head -1)
"$hostile" --update "$sock" c2 67108864 >/tmp/o 2>&1
max=$($bb cat /sys/fs/cgroup/kintest/c2/cells/zones/pod/cells/c2/memory.max 2>/dev/null)
[ "$max" = 67108864 ] && pass update_memory_limit || fail update_memory_limit "memory.max '$max': $($bb cat /tmp/o)"
$C t kill -s KILL c2 >/dev/null 2>&1
$bb sleep 0.5
$C t rm c2 >/dev/null 2>&1
$C c rm c2 >/dev/null 2>&1

# Past the limit: OOM-killed, 137, and containerd hears /tasks/oom.
$C run --rm $R --memory-limit 33554432 bb:1 c3 /bin/sh -c \
	"x=\$(head -c 200000000 /dev/zero | tr '\\0' x); echo survived" >/tmp/o 2>&1
rc=$?
$bb sleep 0.5
[ "$rc" = 137 ] && $bb grep -q '/tasks/oom' /tmp/events && pass oom_killed_event ||
	fail oom_killed_event "rc $rc, events: $($bb grep -c tasks /tmp/events) $($bb grep oom /tmp/events) $($bb cat /tmp/o)"

# Nothing of the containers is left: shims, cgroups, mounts.
$bb sleep 0.5
left="$($bb ls /run/kin/shim/kintest 2>/dev/null) $($bb ls -d /sys/fs/cgroup/kintest/c[0-9] 2>/dev/null) $($bb grep -c kin-pod /proc/mounts)"
[ "$left" = "  0" ] && pass nothing_left || fail nothing_left "'$left'"
kill %1 2>/dev/null
echo "CHECKS DONE"
kill -USR2 1
