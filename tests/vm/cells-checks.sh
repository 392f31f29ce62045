# Runs inside the guest as kin's workload (busybox sh): real cgroup v2
# limits through `kin ctl` against the guest's kin (PID 1). Each check
# prints "CHECK NAME ok" or "CHECK NAME FAIL why"; the host reads the
# console. Ends with a poweroff request to PID 1 (SIGUSR2).
export PATH=/usr/bin:/usr/sbin:/bin:/sbin
bb=/usr/bin/busybox
CG=/sys/fs/cgroup/cells
pass() { echo "CHECK $1 ok"; }
fail() { echo "CHECK $1 FAIL $(echo "$2" | $bb tr '\n' ' ' | $bb cut -c1-300)"; }
k() { kin ctl "$@"; }
json_num() { $bb sed -nE "s/.*\"$1\":([0-9]+).*/\1/p"; } # json_num KEY < json

k events >/tmp/events 2>&1 &
EV=$!
$bb sleep 0.5

# memory.max: a hog is OOM-killed, the event is reported, kin survives.
if k cell create mem memory.max=32M memory.swap.max=0 >/tmp/o 2>&1 &&
	k exec start mem hog -- $bb sh -c "x=\$($bb head -c 200000000 /dev/zero | $bb tr '\\0' x); echo survived" >>/tmp/o 2>&1; then
	k exec wait mem hog >>/tmp/o 2>&1
	rc=$?
	kills=$(k -o json cell show mem | json_num memory_events_oom_kill)
	$bb sleep 0.5
	if [ "$rc" = 137 ] && [ "${kills:-0}" -ge 1 ] && $bb grep -q 'oom_kill  *mem ' /tmp/events &&
		[ "$(k health)" = SERVING ]; then pass memory_max_oom_kill_event
	else fail memory_max_oom_kill_event "wait $rc, oom_kill ${kills:-?}, events: $($bb cat /tmp/events) $($bb cat /tmp/o)"; fi
else fail memory_max_oom_kill_event "$($bb cat /tmp/o)"; fi
k cell delete --force mem >/dev/null 2>&1

# pids.max stops a fork bomb.
k cell create pids pids.max=20 >/tmp/o 2>&1
k exec start pids bomb -- $bb sh -c "for i in \$($bb seq 100); do $bb sleep 30 & done; wait" >>/tmp/o 2>&1
$bb sleep 2
cur=$(k -o json cell show pids | json_num pids_current)
maxev=$($bb sed -n 's/^max //p' $CG/pids/pids.events 2>/dev/null)
if [ -n "$cur" ] && [ "$cur" -le 20 ] && [ "${maxev:-0}" -ge 1 ]; then pass pids_max_stops_fork_bomb
else fail pids_max_stops_fork_bomb "pids.current ${cur:-?}, pids.events max ${maxev:-?}: $($bb cat /tmp/o)"; fi
k cell delete --force pids >/dev/null 2>&1

# cpu.max throttles a busy loop.
k cell create cpu cpu.max="10000 100000" >/tmp/o 2>&1
k exec start cpu spin -- $bb sh -c 'while :; do :; done' >>/tmp/o 2>&1
$bb sleep 2
thr=$(k -o json cell show cpu | json_num cpu_nr_throttled)
if [ "${thr:-0}" -ge 1 ] && [ "$($bb cat $CG/cpu/cpu.max)" = "10000 100000" ]; then pass cpu_max_throttles
else fail cpu_max_throttles "nr_throttled ${thr:-?}, cpu.max $($bb cat $CG/cpu/cpu.max 2>&1): $($bb cat /tmp/o)"; fi
k cell delete --force cpu >/dev/null 2>&1

# cpuset pins: the executable may run on CPU 1 only.
k cell create pin cpuset.cpus=1 >/tmp/o 2>&1
k exec start pin sl -- $bb sleep 100 >>/tmp/o 2>&1
pid=$(k -o json exec status pin sl | json_num pid)
allowed=$($bb sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/${pid:-0}/status 2>/dev/null)
if [ "$allowed" = 1 ]; then pass cpuset_pins
else fail cpuset_pins "pid ${pid:-?} Cpus_allowed_list '$allowed' (nproc $($bb nproc)): $($bb cat /tmp/o)"; fi
k cell delete --force pin >/dev/null 2>&1

# freeze halts progress, thaw resumes it.
k cell create fr >/tmp/o 2>&1
k exec start fr count -- $bb sh -c "while :; do echo x >>/tmp/count; $bb sleep 0.05; done" >>/tmp/o 2>&1
$bb sleep 1
k cell freeze fr >>/tmp/o 2>&1
a=$($bb wc -l </tmp/count); $bb sleep 1; b=$($bb wc -l </tmp/count)
k cell thaw fr >>/tmp/o 2>&1
$bb sleep 1; c=$($bb wc -l </tmp/count)
if [ "$a" = "$b" ] && [ "$c" -gt "$b" ] && $bb grep -q 'frozen  *fr$' /tmp/events; then pass freeze_halts_progress
else fail freeze_halts_progress "counts $a $b $c: $($bb cat /tmp/o)"; fi

# kill leaves no process.
k exec start fr sl -- $bb sleep 100 >/tmp/o 2>&1
k cell kill fr >>/tmp/o 2>&1
$bb sleep 0.5
if [ -z "$($bb cat $CG/fr/cgroup.procs)" ] && k -o json cell show fr | $bb grep -q '"populated":false'; then pass kill_leaves_no_process
else fail kill_leaves_no_process "procs: $($bb cat $CG/fr/cgroup.procs | $bb tr '\n' ' ') $($bb cat /tmp/o)"; fi

# delete leaves no cgroup (a subtree, forced, with a running executable).
k cell create fr/sub >/tmp/o 2>&1
k exec start fr/sub sl -- $bb sleep 100 >>/tmp/o 2>&1
k cell delete --force fr >>/tmp/o 2>&1
if [ ! -e $CG/fr ] && ! k cell show fr >/dev/null 2>&1; then pass delete_leaves_no_cgroup
else fail delete_leaves_no_cgroup "$CG/fr left: $($bb cat /tmp/o)"; fi

# Namespaces and a root: the executable is PID 1 of its own namespace.
k cell create iso >/tmp/o 2>&1
k exec start --ns pid,mnt,uts,ipc --hostname cellhost iso who -- $bb sh -c 'echo pid=$$ host=$(hostname)' >>/tmp/o 2>&1
k exec wait iso who >>/tmp/o 2>&1
if [ "$(k exec logs iso who)" = "pid=1 host=cellhost" ]; then pass namespaces
else fail namespaces "$(k exec logs iso who 2>&1) $($bb cat /tmp/o)"; fi
k cell delete --force iso >/dev/null 2>&1

kill $EV
if [ "$(k health)" = SERVING ] && [ "$($bb cat /proc/1/comm)" = init ]; then pass kin_survives
else fail kin_survives "health: $(k health 2>&1)"; fi
$bb sync
kill -USR2 1
