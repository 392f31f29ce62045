#!/usr/bin/env bash
# containerd runs kin's shim: a private containerd (Debian's 1.6, its own
# config, root, state and socket) with containerd-shim-kin-v2 on its PATH,
# a hand-built busybox image imported with ctr, and ctr driving tasks
# through --runtime io.containerd.kin.v2 as a user would: output and exit
# status, 128+N on a signal, stdin, run -d with exec, ps, pause/resume,
# metrics, kill and delete; the pod seen through the shim's own kin API;
# containerd restarted while a task runs; a shim's kin re-executed while
# containerd waits on its task; a shim SIGKILLed and cleaned up by
# delete; bad input refused with nothing left; and nothing left at the end.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin shim
ns_need_cgroup2
NS=kintest$$
. tests/ns/containerd.sh
cleanup() {
	cd_cleanup
	rm -rf "$T"
}
trap cleanup EXIT
cd_setup sh echo cat ls sleep true hostname ps id kill

# run: output on stdout and stderr, the exit status.
timeout 30 $C run --rm $R $IMG t1 /bin/sh -c 'echo to-out; echo to-err >&2; exit 3' \
	>"$T/o1" 2>"$T/e1"
rc=$?
[ $rc -eq 3 ] && grep -qx to-out "$T/o1" && grep -q to-err "$T/e1" && ok run_output_status ||
	{ cp "$T/e1" "$T/out"; bad run_output_status "rc $rc, stdout '$(cat "$T/o1")'"; }

# stdin, through the FIFO containerd gives.
echo piped-in | timeout 30 $C run --rm $R $IMG t2 /bin/cat >"$T/out" 2>&1
grep -qx piped-in "$T/out" && ok run_stdin || bad run_stdin "cat did not echo its stdin"

# A container killed: 128+9.
timeout 30 $C run --rm $R $IMG t3 /bin/sleep 100 >"$T/o3" 2>&1 &
RUN=$!
wait_for "$C t ls 2>/dev/null | grep -q '^t3 .*RUNNING'" 500
$C t kill -s KILL t3 >/dev/null 2>&1
wait $RUN
rc=$?
[ $rc -eq 137 ] && ok run_killed_137 || { cp "$T/o3" "$T/out"; bad run_killed_137 "rc $rc"; }

# run -d, then what a user does with a running task.
timeout 30 $C run -d $R $IMG d1 /bin/sleep 1000 >"$T/out" 2>&1
$C t ls >"$T/out" 2>&1
PID=$(awk '$1 == "d1" && $3 == "RUNNING" {print $2}' "$T/out")
[ -n "$PID" ] && [ "$PID" -gt 0 ] && [ "$(readlink /proc/$PID/exe)" = /bin/busybox ] &&
	ok detached_running_pid || bad detached_running_pid "no RUNNING d1 with busybox's pid"
$C t exec --exec-id e1 d1 /bin/sh -c 'echo pid $$; hostname; exit 4' >"$T/out" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -qx 'pid [0-9]*' "$T/out" && ! grep -qx 'pid 1' "$T/out" &&
	ok exec_in_container || bad exec_in_container "rc $rc"
echo via-exec | $C t exec --exec-id e2 d1 /bin/cat >"$T/out" 2>&1
grep -qx via-exec "$T/out" && ok exec_stdin || bad exec_stdin "no echo"
# The exec sees the container's own pid namespace: its pid 1 is sleep.
$C t exec --exec-id e3 d1 /bin/cat /proc/1/cmdline >"$T/out" 2>&1
tr '\0' ' ' <"$T/out" | grep -q '^/bin/sleep 1000' && ok exec_joins_pid_ns ||
	bad exec_joins_pid_ns "pid 1 is not the container's"
$C t exec --exec-id e4 d1 /bin/sleep 100 >/dev/null 2>&1 &
EX=$!
wait_for "$C t ps d1 2>/dev/null | grep -c '^[0-9]' | grep -qx 2" 250
$C t kill --exec-id e4 -s TERM d1 >/dev/null 2>&1
wait $EX
rc=$?
[ $rc -eq 143 ] && ok exec_signalled_143 || bad exec_signalled_143 "rc $rc"
$C t ps d1 >"$T/out" 2>&1
grep -qw "$PID" "$T/out" && ok ps || bad ps "pid $PID not listed"
$C t pause d1 >"$T/out" 2>&1 && $C t ls 2>&1 | grep -q '^d1 .*PAUSED' &&
	grep -q '^frozen 1' "$CG/$NS/d1/cells/zones/pod/cells/d1/cgroup.events" 2>/dev/null &&
	$C t resume d1 >>"$T/out" 2>&1 && $C t ls 2>&1 | grep -q '^d1 .*RUNNING' &&
	grep -q '^frozen 0' "$CG/$NS/d1/cells/zones/pod/cells/d1/cgroup.events" &&
	ok pause_resume || bad pause_resume "state or cgroup.freeze did not follow"
$C t metrics d1 >"$T/out" 2>&1
grep -q 'cpu.usage_usec' "$T/out" && ok metrics || bad metrics "no cgroup v2 metrics"
# The pod through the shim's own kin API: the zone, the container's cell.
KS=/run/kin/shim/$NS/d1/kin.sock
"$KIN" ctl --socket "$KS" zone list >"$T/out" 2>&1 && grep -q '^pod ' "$T/out" &&
	"$KIN" ctl --socket "$KS" --target pod exec list >"$T/out" 2>&1 &&
	grep -q '^d1 *init *running' "$T/out" && ok kin_api_sees_pod || bad kin_api_sees_pod "no zone or exec"
# A stdio path kin itself would open into its own memory is refused.
"$KIN" ctl --socket "$KS" --target pod exec start d1 peek --stdin-from /proc/self/mem -- /bin/true \
	>"$T/out" 2>&1
grep -q 'INVALID_ARGUMENT.*a /proc or /sys file is not stdio' "$T/out" && ok stdio_proc_refused ||
	bad stdio_proc_refused "not refused"

# A hostile caller of the shim's Task service: each bad request answered
# with its code and a sentence, the task untouched, the shim serving.
SOCK=$(sed 's|^unix://||' "$CD/state/io.containerd.runtime.v2.task/$NS/d1/address" 2>/dev/null)
mkdir -p "$T/hostile"
"${BUILD_DIR:-$PWD/$BUILD}/shim-hostile" "$SOCK" d1 "$T/hostile" >"$T/hostile.out" 2>&1
while read -r verdict name why; do
	case $verdict in
	ok) ok "hostile/$name" ;;
	bad) echo "$why" >"$T/out"; bad "hostile/$name" "$why" ;;
	esac
done <"$T/hostile.out"
grep -q '^ok task_still_running' "$T/hostile.out" || { cp "$T/hostile.out" "$T/out"; bad hostile "no verdict"; }
ls /run/kin/shim/$NS/d1/pod | grep -qv '^d1$' && bad hostile_left "a refused Create left a pod entry" ||
	ok hostile_nothing_left

# containerd restarted while d1 runs: it reconnects through the address
# file and the task goes on; kill and wait work afterwards.
kill "$CPID" && wait "$CPID" 2>/dev/null
cd_start || bad containerd_restart "containerd did not come back"
$C t ls 2>&1 | grep -q "^d1 *$PID *RUNNING" && ok restart_task_kept ||
	{ $C t ls >"$T/out" 2>&1; bad restart_task_kept "d1 not RUNNING after the restart"; }

# The shim's kin re-executes itself (an upgrade in place, `kin ctl reexec`
# on its own socket): the pod, its tasks, containerd's connection and its
# Wait on an attached run go along; containerd notices nothing.
timeout 30 $C run --rm $R $IMG w1 /bin/sh -c 'sleep 3; echo after; exit 7' >"$T/ow" 2>&1 &
RUN=$!
wait_for "$C t ls 2>/dev/null | grep -q '^w1 .*RUNNING'" 500
$C t exec --exec-id e8 d1 /bin/sh -c 'sleep 2.5; exit 6' >/dev/null 2>&1 &
EXE=$!
sleep 0.3 # ctr's Waits reach the shims
"$KIN" ctl --socket "/run/kin/shim/$NS/w1/kin.sock" reexec >"$T/out" 2>&1 &&
	"$KIN" ctl --socket "$KS" reexec >>"$T/out" 2>&1
rx=$?
# (re-executed while w1 runs and containerd waits on it, not after)
$C t ls 2>/dev/null | grep -q '^w1 .*RUNNING'
running=$?
wait $RUN
rc=$?
wait $EXE
erc=$?
[ $rx -eq 0 ] && [ $running -eq 0 ] && [ $rc -eq 7 ] && grep -qx after "$T/ow" && [ $erc -eq 6 ] &&
	grep -q "re-exec: the shim's tasks taken over: 1" "/run/kin/shim/$NS/d1/shim.log" &&
	ok shim_reexec_wait_goes_along ||
	bad shim_reexec_wait_goes_along "re-exec exit $rx, w1 running $running, run exit $rc, exec exit $erc: $(cat "$T/ow")"
$C t exec --exec-id e9 d1 /bin/sh -c 'exit 5' >/dev/null 2>&1
rc=$?
$C t ls 2>&1 | grep -q "^d1 *$PID *RUNNING" && [ $rc -eq 5 ] && ok shim_reexec_task_goes_on ||
	bad shim_reexec_task_goes_on "exec rc $rc; $($C t ls 2>&1 | tr '\n' ' ')"
$C t kill -s KILL d1 >/dev/null 2>&1
wait_for "$C t ls 2>/dev/null | grep -q '^d1 .*STOPPED'" 250 && ok restart_kill ||
	bad restart_kill "no STOPPED after kill"
$C t rm d1 >"$T/out" 2>&1 && $C c rm d1 >>"$T/out" 2>&1 && ok delete || bad delete "rm failed"
wait_for "[ ! -e /run/kin/shim/$NS/d1 ]" 250 && ok shim_gone_after_delete ||
	bad shim_gone_after_delete "its state directory is still there"

# A shim killed outright: containerd's cleanup runs `delete`, which leaves
# nothing of the pod (processes, cgroups, mounts, state).
timeout 30 $C run -d $R $IMG d2 /bin/sleep 1000 >"$T/out" 2>&1
SHIM=$(pgrep -f "containerd-shim-kin-v2 -namespace $NS -id d2 ")
PID=$($C t ls 2>/dev/null | awk '$1 == "d2" {print $2}')
[ -n "$SHIM" ] && kill -KILL "$SHIM"
wait_for "$C t ls 2>/dev/null | grep -q '^d2 .*STOPPED'" 250
$C t rm -f d2 >/dev/null 2>&1
$C c rm d2 >"$T/out" 2>&1
wait_for "[ ! -d '$CG/$NS/d2' ] && [ ! -e /run/kin/shim/$NS/d2 ]" 250 &&
	! kill -0 "$PID" 2>/dev/null &&
	! grep -q "/$NS/d2" /proc/self/mountinfo && ok shim_killed_delete_cleans ||
	bad shim_killed_delete_cleans "something of d2 is left"

# Bad input: refused with a sentence naming it, nothing left.
# ctr wants a console for --tty: script(1) gives it one.
if command -v script >/dev/null; then
	timeout 30 script -qec "$C run --rm $R --tty $IMG b1 /bin/true" /dev/null >"$T/out" 2>&1 </dev/null
	grep -q 'terminals are not supported' "$T/out" && ok refuse_terminal ||
		bad refuse_terminal "no clear refusal"
else
	echo "SKIP ns/shim/refuse_terminal: no script(1) to give ctr a console"
fi
timeout 30 $C run --rm $R --with-ns user:/proc/self/ns/user $IMG b2 /bin/true >"$T/out" 2>&1
grep -q 'joining a user namespace by path is not supported' "$T/out" &&
	! grep -q '^b2 ' <($C t ls 2>/dev/null) && ok refuse_spec ||
	bad refuse_spec "a user namespace to join was not refused"
ln -s "$KIN" "$BIN/containerd-shim-kin-vm-v2"
# kin-vm without its config, then with bad ones (tests/vm/kin-vm runs pods).
timeout 30 $C run --rm --runtime io.containerd.kin-vm.v2 $IMG b4 /bin/true >"$T/out" 2>&1
grep -q "$T/shim.conf: No such file.*kin-vm pods need vm.kernel and vm.image" "$T/out" &&
	! grep -q '^b4 ' <($C t ls 2>/dev/null) && ok refuse_kin_vm_no_config ||
	bad refuse_kin_vm_no_config "no clear refusal"
printf '# pods\nvm.kernel = /nonexistent\nvm.cpus = lots\n' >"$T/shim.conf"
timeout 30 $C run --rm --runtime io.containerd.kin-vm.v2 $IMG b5 /bin/true >"$T/out" 2>&1
grep -q 'shim.conf: line 3: vm.cpus: bad value "lots"' "$T/out" &&
	! grep -q '^b5 ' <($C t ls 2>/dev/null) && ok refuse_kin_vm_bad_config ||
	bad refuse_kin_vm_bad_config "no clear refusal"
printf 'vm.kernel = /nonexistent\nvm.image = /nonexistent\n' >"$T/shim.conf"
timeout 30 $C run --rm --runtime io.containerd.kin-vm.v2 $IMG b6 /bin/true >"$T/out" 2>&1
grep -q 'kernel "/nonexistent": No such file' "$T/out" &&
	! grep -q '^b6 ' <($C t ls 2>/dev/null) && ok refuse_kin_vm_no_kernel ||
	bad refuse_kin_vm_no_kernel "no clear refusal"
timeout 30 $C run --rm $R $IMG b3 /no/such/program >"$T/out" 2>&1
grep -q 'No such file' "$T/out" && ok refuse_missing_program || bad refuse_missing_program "no error"

# containerd does not wait for a shim it stopped to end: a slow machine
# may still be tearing the last pods down.
nothing_left() {
	[ -z "$(ls /run/kin/shim/$NS 2>/dev/null)" ] && ! grep -q "kin-pod\|/$NS/" /proc/self/mountinfo &&
		[ -z "$(pgrep -f "containerd-shim-kin(-vm)?-v2 -namespace $NS ")" ]
}
if wait_for nothing_left 500; then
	ok nothing_left
else
	{
		echo "state:"; ls -laR /run/kin/shim/$NS 2>&1 | head -40
		echo "mounts:"; grep "kin-pod\|/$NS/" /proc/self/mountinfo
		echo "shims:"; pgrep -af "containerd-shim-kin(-vm)?-v2 -namespace $NS "
		for l in /run/kin/shim/$NS/*/shim.log; do [ -f "$l" ] && tail -8 "$l"; done
		echo "containerd's log:"; grep -v 'level=info' "$CD/log" | tail -30
	} >"$T/out" 2>&1
	bad nothing_left "shim state, mounts or shims left"
fi
ns_suite_end
