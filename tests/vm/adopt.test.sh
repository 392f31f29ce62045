#!/usr/bin/env bash
# A VM outlives its host kin: the host kin (a daemon with a state
# directory) is SIGKILLed while g1 runs, and a successor on the same state
# directory adopts it — the same QEMU, in its cell, its link connected
# again (the guest's kin answers through vm/g1, an executable runs there),
# and a VM zone (vmz) with it; then a second SIGKILL and successor; a cell under vms/ that no VM of the
# dead kin's record names is killed and removed. At the end `vm stop g1`
# powers the guest off cleanly over the link; its VMM, no longer kin's
# child, ends with its status unknown; its cell goes. The guest: the
# Debian kernel under QEMU (TCG), an initramfs from `kin image build`.
cd "$(dirname "$0")/../.."
. tests/vm/lib.sh
vm_suite_begin adopt

S=$T/host.sock
C() { "$KIN" ctl --socket "$S" "$@"; }
G() { "$KIN" ctl --socket "$S" --target vm/g1 "$@"; }
"$KIN" image build -o "$T/guest.cpio" --add-binary /bin/busybox >"$T/build.log" 2>&1 ||
	{ bad image_build "kin image build failed" "$T/build.log"; vm_suite_end; exit; }

host_kin_start vmadopt --state-dir "$T/state"
if [ -z "$BASE" ]; then
	echo "SKIP vm/adopt: no cgroup of its own for the host kin (adoption needs cells)"
	vm_suite_end
	exit
fi
successor() { host_kin_successor --state-dir "$T/state"; }
# gone PID: ended (a zombie until the real init, its parent now, reaps it)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
serving() { # the guest's kin through the link, within 60 s
	for _ in $(seq 600); do
		[ "$(G --timeout 2s health 2>/dev/null)" = SERVING ] && return 0
		sleep 0.1
	done
	return 1
}

C vm start g1 --kernel "$KERNEL" --image "$T/guest.cpio" >"$T/out" 2>&1 && serving && ok vm_serving ||
	{ bad vm_serving "$(cat "$T/out")" "$T/host.log"; vm_suite_end; exit; }
pid=$(C vm status g1 -o json 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
# And a VM zone, adopted the same way (its route is its name).
zserving() {
	for _ in $(seq 600); do
		[ "$(C --target vmz --timeout 2s health 2>/dev/null)" = SERVING ] && return 0
		sleep 0.1
	done
	return 1
}
C zone create vmz --vm --kernel "$KERNEL" --image "$T/guest.cpio" >"$T/out" 2>&1 && zserving &&
	ok vm_zone_serving || bad vm_zone_serving "$(cat "$T/out")" "$T/host.log"
zpid=$(C zone status vmz -o json 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
# A cell under vms/ that the state file does not name (made by hand here,
# as a killed kin's starting VM's would be): swept at adoption.
mkdir "$BASE/cells/vms/ghost"
sh -c "echo \$\$ >'$BASE/cells/vms/ghost/cgroup.procs' && exec sleep 1000" &
GHOST=$!
sleep 0.3 # the state file is written within a few ms of a change

for round in 1 2; do
	kill -KILL "$HOST"
	wait "$HOST" 2>/dev/null
	kill -0 "$pid" 2>/dev/null && ok "vmm_outlives_kin_$round" || bad "vmm_outlives_kin_$round" "QEMU $pid is gone"
	successor
	out=$(C vm status g1 -o json 2>&1)
	echo "$out" | grep -q "\"pid\":$pid," && echo "$out" | grep -q '"state":"running"' &&
		echo "$out" | grep -q '"cell":"vms/g1"' && [ "$(grep -c 'adopt: 2 VMs adopted' "$T/host.log")" -eq "$round" ] &&
		ok "vm_adopted_$round" || bad "vm_adopted_$round" "$out" "$T/host.log"
	serving && G cell create "t$round" >/dev/null 2>&1 &&
		G exec start "t$round" hi -- /bin/busybox echo "hello-$round" >/dev/null 2>&1 &&
		G exec wait "t$round" hi >/dev/null 2>&1 && G exec logs "t$round" hi 2>/dev/null | grep -qx "hello-$round" &&
		ok "link_connected_again_$round" || bad "link_connected_again_$round" "no answer through vm/g1" "$T/host.log"
	out=$(C zone status vmz -o json 2>&1)
	[ -n "$zpid" ] && echo "$out" | grep -q "\"pid\":$zpid," && echo "$out" | grep -q '"kind":"vm"' && zserving &&
		[ "$(C --target vmz -o json version 2>&1 | grep -c '"role":"machine"')" = 1 ] &&
		ok "vm_zone_adopted_$round" || bad "vm_zone_adopted_$round" "$out" "$T/host.log"
done
for _ in $(seq 50); do kill -0 "$GHOST" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$GHOST" 2>/dev/null && [ ! -e "$BASE/cells/vms/ghost" ] &&
	grep -q 'adopt: cell vms/ghost, left by the previous kin and named by no VM record' "$T/host.log" &&
	ok unrecorded_vm_cell_removed || bad unrecorded_vm_cell_removed "ghost still there" "$T/host.log"
wait "$GHOST" 2>/dev/null

# The stop: the guest's kin powers off over the link; the VMM's end is
# seen (status unknown: it is not this kin's child), its cell goes.
out=$(C vm stop --timeout 60s g1 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "state:    exited" && gone "$pid" &&
	grep -q "poweroff now" "$T/vm/g1/console.log" && [ ! -e "$BASE/cells/vms/g1" ] && ok adopted_vm_stops_cleanly ||
	bad adopted_vm_stops_cleanly "rc $rc: $out" "$T/host.log"
grep -q 'vm "g1": its VMM, adopted after a killed kin, ended; its status is unknown' "$T/host.log" &&
	ok adopted_vmm_status_unknown || bad adopted_vmm_status_unknown "not in the host log"
# The VM zone stops as ever: powered off over its route, gone from the list.
out=$(C zone stop --timeout 60s vmz 2>&1); rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "state:    gone" && gone "$zpid" && ! C zone list 2>&1 | grep -q vmz &&
	[ ! -e "$BASE/cells/vms/vmz" ] && ok adopted_vm_zone_stops || bad adopted_vm_zone_stops "rc $rc: $out" "$T/host.log"
out=$(C vm start g1 --kernel "$KERNEL" --image "$T/guest.cpio" 2>&1) && serving && ok name_reusable ||
	bad name_reusable "$out" "$T/host.log"
C poweroff >/dev/null 2>&1
wait "$HOST"; rc=$?
[ $rc -eq 0 ] && [ ! -e "$T/state/state" ] && ok host_stops_clean || bad host_stops_clean "exit $rc" "$T/host.log"
grep -E "AddressSanitizer|runtime error|LeakSanitizer" "$T/host.log" && bad host_sanitizer_clean "see above" ||
	ok host_sanitizer_clean
vm_suite_end
