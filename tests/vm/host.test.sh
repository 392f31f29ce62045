#!/usr/bin/env bash
# A host kin runs a VM and reaches the guest's kin through the link: one
# boot, every check over RPC through the host kin (kin ctl vm ..., kin ctl
# --target vm/NAME ...). The guest: the Debian kernel under QEMU, an
# initramfs from `kin image build`, kin as PID 1. Checks: ready over the
# link, version (role machine, kernel release), modules loaded, cgroup2
# controllers, vsock loopback from inside, exec status, logs and events
# streamed through the host, vm list/status, errors. The VMM runs as exec
# vmm of cell vms/g1 (QEMU in its cgroup.procs); a second VMM that dies at
# once (no boot: a file that is no kernel) is noticed (status, event, its
# own message in exec logs, its cell kept) and `vm stop` removes its cell;
# VMM limits are passed to the cell. The host kin re-executes itself with
# g1 running and g2 ended: both taken over. Then it is told to power off
# while g1 runs: the guest's kin powers off cleanly first, the VMM exits 0,
# its cell goes, then the host kin ends.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin host

S=$T/host.sock
C() { "$KIN" ctl --socket "$S" "$@"; }
G() { "$KIN" ctl --socket "$S" --target vm/g1 "$@"; }

"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox --modules vsock_loopback \
	>"$T/build.log" 2>&1 || { bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }
ok image_build
REL=$(basename "$(dirname "$(dirname "$KERNEL")")")

# The host kin: a daemon in a cgroup of its own (its cells go below it).
host_kin_start vmhost

t0=$(date +%s%N)
out=$(C vm start g1 --kernel "$KERNEL" --image "$T/guest.cpio" --cpus 2 --memory 512 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "state:    running" && echo "$out" | grep -q "console:  $T/vm/g1/console.log" &&
	ok vm_start || { bad vm_start "rc $rc: $out" "$T/host.log"; vm_suite_end; exit; }
# The VMM in a cell of its own (where the host kin has cells).
out=$(C vm status g1 -o json 2>&1)
pid=$(echo "$out" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
if [ -n "$BASE" ]; then
	procs=$(cat "$BASE/cells/vms/g1/cgroup.procs" 2>&1)
	echo "$out" | grep -q '"cell":"vms/g1"' && [ -n "$pid" ] && echo "$procs" | grep -qx "$pid" &&
		[ "$(cat /proc/$pid/comm 2>/dev/null)" = qemu-system-x86 ] && ok vmm_in_its_cell ||
		bad vmm_in_its_cell "pid '$pid', cgroup.procs '$procs': $out"
	out=$(C exec status vms/g1 vmm 2>&1)
	echo "$out" | grep -q "state:     running" && echo "$out" | grep -q "pid:       $pid" &&
		ok vmm_exec_status || bad vmm_exec_status "$out"
else
	echo "$out" | grep -q '"cell":"","vmm_note":"a plain child of kin: ' && ok vmm_plain_child_without_cells ||
		bad vmm_plain_child_without_cells "$out"
fi
out=$(C vm start g1 --kernel "$KERNEL" --image "$T/guest.cpio" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q 'ALREADY_EXISTS: vm "g1" already exists' && ok duplicate_refused ||
	bad duplicate_refused "rc $rc: $out"
out=$(C vm start g2 --kernel /nonexistent --image "$T/guest.cpio" 2>&1); rc=$?
[ $rc -eq 2 ] && ok missing_kernel_usage_error || bad missing_kernel_usage_error "rc $rc: $out"
out=$(C vm start 'bad/name' --kernel "$KERNEL" --image "$T/guest.cpio" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q INVALID_ARGUMENT && ok bad_name_refused || bad bad_name_refused "rc $rc: $out"
out=$(G health 2>&1)
echo "$out" | grep -q "UNAVAILABLE: target \"vm/g1\": vm/g1: its kin has not answered yet" &&
	ok unavailable_before_ready || bad unavailable_before_ready "$out"

ready=
for _ in $(seq 1200); do
	[ "$(G --timeout 2s health 2>/dev/null)" = SERVING ] && { ready=1; break; }
	sleep 0.1
done
t1=$(date +%s%N)
[ -n "$ready" ] && ok guest_serving_through_link ||
	{ bad guest_serving_through_link "no SERVING in 120 s" "$T/vm/g1/console.log"; vm_suite_end; exit; }
echo "    (vm start -> guest SERVING through the host kin: $(( (t1 - t0) / 1000000 )) ms, TCG)"

out=$(G -o json version 2>&1)
echo "$out" | grep -q '"role":"machine"' && echo "$out" | grep -q "\"kernel_release\":\"$REL\"" &&
	echo "$out" | grep -qE '"pid":1[,}]' && ok version_machine_kernel || bad version_machine_kernel "$out (want $REL)"
out=$(C vm status g1 -o json 2>&1)
echo "$out" | grep -q '"state":"running"' && echo "$out" | grep -q '"link_ready":true' &&
	echo "$out" | grep -q '"route":"vm/g1"' && ok vm_status_json || bad vm_status_json "$out"
out=$(C vm list 2>&1)
echo "$out" | grep -qE '^g1 +running .* ready ' && ok vm_list || bad vm_list "$out"

# In-guest facts, from executables started in a guest cell over the link.
run() { # run NAME CMD...: start, wait, logs
	local name=$1; shift
	G exec start t "$name" -- "$@" >/dev/null 2>&1 || return 99
	G exec wait t "$name" >/dev/null 2>&1; local rc=$?
	G exec logs t "$name" 2>&1
	return $rc
}
G cell create t pids.max=200 memory.max=128M >/dev/null 2>&1 && ok cell_created_in_guest || bad cell_created_in_guest "$(G cell create t 2>&1)"
out=$(G cell show t 2>&1)
echo "$out" | grep -q "memory.max = 134217728" && ok guest_limits_apply || bad guest_limits_apply "$out"
# The modules not needed for RPC load after ready, in the late boot.
for _ in $(seq 300); do grep -q "boot complete" "$T/vm/g1/console.log" && break; sleep 0.1; done
out=$(run mods /bin/busybox cat /proc/modules)
for m in virtio_console vmw_vsock_virtio_transport vsock_loopback virtio_net; do
	echo "$out" | grep -q "^$m " && ok "module_$m" || bad "module_$m" "not in /proc/modules"
done
out=$(run ctrl /bin/busybox cat /sys/fs/cgroup/cgroup.controllers)
missing=
for c in cpu cpuset io memory pids; do echo " $out " | grep -q " $c " || missing="$missing $c"; done
[ -z "$missing" ] && ok cgroup2_controllers || bad cgroup2_controllers "missing$missing in '$out'"
out=$(run vs /usr/bin/kin ctl --connect vsock:1:1024 health)
[ "$out" = SERVING ] && ok vsock_loopback_in_guest || bad vsock_loopback_in_guest "$out"
run st /bin/busybox sh -c 'echo out; echo err >&2; exit 7' >/dev/null; rc=$?
[ $rc -eq 7 ] && ok exec_status_through_link || bad exec_status_through_link "exec wait gave $rc"

# Streams through the link: events and a followed log.
timeout 20 "$KIN" ctl --socket "$S" --target vm/g1 -o json events --cell t >"$T/events" 2>&1 &
EV=$!
sleep 1
G exec start t tick -- /bin/busybox sh -c 'for i in 1 2 3; do echo tick$i; sleep 0.3; done' >/dev/null 2>&1
out=$(timeout 20 "$KIN" ctl --socket "$S" --target vm/g1 exec logs -f t tick 2>&1)
[ "$(echo "$out" | tr '\n' ' ')" = "tick1 tick2 tick3 " ] && ok logs_follow_through_link ||
	bad logs_follow_through_link "'$out'"
for _ in $(seq 50); do grep -q '"type":"EXEC_EXIT".*"exec":"tick"' "$T/events" && break; sleep 0.1; done
kill $EV 2>/dev/null; wait $EV 2>/dev/null
grep -q '"type":"EXEC_START","cell":"t","exec":"tick"' "$T/events" &&
	grep -q '"type":"EXEC_EXIT","cell":"t","exec":"tick"' "$T/events" && ok events_stream_through_link ||
	bad events_stream_through_link "$(head -c 600 "$T/events")"

# A VMM that dies on its own (a file that is no kernel: QEMU refuses it at
# once): its status, an event, QEMU's own words in exec logs, its cell kept
# for them; `vm stop` of the exited VM removes the cell.
if [ -n "$BASE" ]; then
	head -c 4096 /dev/urandom >"$T/junk"
	timeout 20 "$KIN" ctl --socket "$S" -o json events >"$T/events2" 2>&1 &
	EV=$!
	sleep 0.5
	C vm start g2 --kernel "$T/junk" --image "$T/guest.cpio" >/dev/null 2>&1
	for _ in $(seq 100); do C vm status g2 -o json 2>/dev/null | grep -q '"state":"exited"' && break; sleep 0.1; done
	out=$(C vm status g2 -o json 2>&1)
	echo "$out" | grep -q '"state":"exited"' && echo "$out" | grep -q '"exit_status":1,' &&
		echo "$out" | grep -q '"cell":"vms/g2"' && [ -d "$BASE/cells/vms/g2" ] && ok vmm_death_noticed ||
		bad vmm_death_noticed "$out"
	grep -q 'vm "g2": the VMM ended on its own with status 1 (its cell vms/g2 stays for its logs)' "$T/host.log" &&
		ok vmm_death_logged || bad vmm_death_logged "not in the host log" "$T/host.log"
	for _ in $(seq 30); do grep -q '"type":"EXEC_EXIT","cell":"vms/g2","exec":"vmm"' "$T/events2" && break; sleep 0.1; done
	kill $EV 2>/dev/null; wait $EV 2>/dev/null
	grep -q '"type":"EXEC_START","cell":"vms/g2","exec":"vmm"' "$T/events2" &&
		grep -q '"type":"EXEC_EXIT","cell":"vms/g2","exec":"vmm".*"exit_code":1' "$T/events2" &&
		ok vmm_exit_event || bad vmm_exit_event "$(head -c 800 "$T/events2")"
	out=$(C exec logs vms/g2 vmm 2>&1); rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q '^qemu' && ok vmm_logs_in_exec_ring || bad vmm_logs_in_exec_ring "rc $rc: '$out'"
fi

# The host kin re-executes itself with g1 running (and g2 ended, kept):
# the same VMM goes on, the link route is the same connection (the guest
# answers at once), g2's status and cell stay; the stop of g2, the
# poweroff and the VMM's exit below are the new kin's.
pid1=$(C vm status g1 -o json 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
nvms=$(C vm list 2>/dev/null | grep -c '^g[0-9] ')
out=$(C reexec 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "re-exec: $nvms VMs taken over" "$T/host.log" && ok reexec_vms_taken_over ||
	bad reexec_vms_taken_over "rc $rc: $out; $(grep 're-exec' "$T/host.log" | tail -5)"
out=$(C vm status g1 -o json 2>&1)
echo "$out" | grep -q "\"pid\":$pid1," && echo "$out" | grep -q '"state":"running"' &&
	echo "$out" | grep -q '"link_ready":true' && [ "$(G --timeout 5s health 2>&1)" = SERVING ] &&
	ok reexec_vm_runs_on || bad reexec_vm_runs_on "pid was $pid1: $out"
run after /bin/busybox echo after-reexec | grep -qx after-reexec && ok reexec_exec_through_link ||
	bad reexec_exec_through_link "$(G exec logs t after 2>&1)"
if [ -n "$BASE" ]; then
	out=$(C vm status g2 -o json 2>&1)
	echo "$out" | grep -q '"state":"exited"' && echo "$out" | grep -q '"exit_status":1,' &&
		[ -d "$BASE/cells/vms/g2" ] && ok reexec_ended_vm_kept || bad reexec_ended_vm_kept "$out"
	out=$(C vm stop g2 2>&1); rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q "state:    exited (status 1)" && [ ! -e "$BASE/cells/vms/g2" ] &&
		! C exec status vms/g2 vmm >/dev/null 2>&1 && ok vm_stop_leaves_no_cell ||
		bad vm_stop_leaves_no_cell "rc $rc: $out; $(ls "$BASE/cells/vms" 2>&1)"
	# Limits go to the VMM's cell (this host's cgroup2 may lack the
	# controller: then the start fails naming it, and leaves nothing).
	out=$(C vm start g3 --kernel "$T/junk" --image "$T/guest.cpio" pids.max=64 2>&1); rc=$?
	if [ $rc -eq 0 ]; then
		[ "$(cat "$BASE/cells/vms/g3/pids.max" 2>&1)" = 64 ] && ok vmm_limits_applied ||
			bad vmm_limits_applied "$(cat "$BASE/cells/vms/g3/pids.max" 2>&1)"
	else
		echo "$out" | grep -q 'pids' && [ ! -e "$BASE/cells/vms/g3" ] &&
			! C vm status g3 >/dev/null 2>&1 && ok vmm_limits_refused_cleanly ||
			bad vmm_limits_refused_cleanly "rc $rc: $out"
	fi
	out=$(C vm start g4 --kernel "$T/junk" --image "$T/guest.cpio" bogus.key=1 2>&1); rc=$?
	[ $rc -eq 1 ] && echo "$out" | grep -q 'INVALID_ARGUMENT: vm "g4": .*bogus.key' && ok vmm_bad_limit_refused ||
		bad vmm_bad_limit_refused "rc $rc: $out"
fi

# The host kin is told to power off while g1 runs: the guest's kin powers
# off over the link first (no SIGTERM to its VMM), the VMM exits 0, its
# cell goes, then the host kin stops the rest and ends.
t2=$(date +%s%N)
out=$(C poweroff 2>&1); rc=$?
wait $HOST; hrc=$?
t3=$(date +%s%N)
[ $rc -eq 0 ] && [ $hrc -eq 0 ] && ok host_kin_poweroff || bad host_kin_poweroff "ctl $rc, kin $hrc: $out" "$T/host.log"
echo "    (host kin poweroff with a VM running -> host kin exited: $(( (t3 - t2) / 1000000 )) ms)"
con=$T/vm/g1/console.log
grep -q "poweroff asked over RPC" "$con" && grep -q "poweroff now" "$con" && grep -q "reboot: Power down" "$con" &&
	ok console_shows_kin_shutdown || bad console_shows_kin_shutdown "no clean poweroff in the console" "$con"
grep -q 'stopping (stop): 1 VMs power off first' "$T/host.log" && grep -q 'vm "g1": asked its kin to power off' "$T/host.log" &&
	grep -q 'vm "g1": VMM exited with status 0' "$T/host.log" && ! grep -q 'Ctrl-Alt-Del' "$T/host.log" &&
	ok host_stop_powers_vm_off_first || bad host_stop_powers_vm_off_first "see the host log" "$T/host.log"
# The VMs first, then SIGTERM to the rest.
vmexit=$(grep -n 'vm "g1": VMM exited with status 0' "$T/host.log" | head -1 | cut -d: -f1)
term=$(grep -n 'SIGTERM to every process' "$T/host.log" | head -1 | cut -d: -f1)
[ -n "$vmexit" ] && [ -n "$term" ] && [ "$vmexit" -lt "$term" ] && ok vms_before_sigterm ||
	bad vms_before_sigterm "VMM exit at line '$vmexit', SIGTERM at line '$term'"
if [ -n "$BASE" ]; then
	[ ! -e "$BASE/cells/vms/g1" ] && ok vmm_cell_gone_after_stop || bad vmm_cell_gone_after_stop "$(ls -R "$BASE/cells" 2>&1 | head)"
fi
grep -E "AddressSanitizer|runtime error|LeakSanitizer" "$T/host.log" && bad host_sanitizer_clean "see above" ||
	ok host_sanitizer_clean
vm_suite_end
