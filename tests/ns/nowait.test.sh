#!/usr/bin/env bash
# The loop never waits (#15): every step of a VM's start or stop and of a
# zone's start that could hang is a loop source with a deadline. Real
# hangs: a FUSE mount nobody serves ($HANG, in kin's private mount
# namespace only, as in ns/exec-start), made after the daemon is up:
#   - a VMM that never opens its monitor: `vm stop` falls back to a kill
#     at its deadline;
#   - a VMM whose setup hangs (the first directory of kin's PATH, where
#     its execvp looks for QEMU, is the hung mount);
#   - a VM whose kernel is on the hung mount (the files' check, in a
#     child);
#   - a zone whose root is on the hung mount (the zone setup's check).
# While each hangs, RPC is answered at once, an executable's exit is
# reaped and its status told, and a signal to kin (SIGHUP) is handled;
# each hung start ends DEADLINE_EXCEEDED (5 s) leaving nothing: no
# process, no cell, the name free.
cd "$(dirname "$0")/../.."
. tests/ns/lib.sh
ns_suite_begin nowait

ns_need_cgroup2
ns_need_fuse
TOP=kin-nowait-test-$$
cleanup() {
	[ -n "${DPID:-}" ] && kill -KILL "$DPID" 2>/dev/null
	[ -n "${HOLDER:-}" ] && kill -KILL "$HOLDER" 2>/dev/null
	cgroup_tree_remove "$CG/$TOP"
	rm -rf "$T"
}
trap cleanup EXIT

S=$T/k.sock
BASE=$CG/$TOP/d
CELLS=$BASE/cells
HANG=$T/p # first in kin's PATH: empty until it becomes the hung mount
mkdir -p "$HANG" "$T/bin" "$T/vm" "$T/zones" "$T/state"
printf '#!/bin/sh\nexec sleep 100000\n' >"$T/bin/qemu-system-x86_64" # never opens a monitor
chmod +x "$T/bin/qemu-system-x86_64"
: >"$T/vmlinuz"
: >"$T/initrd"
: >"$HANG/vmlinuz" # what kin ctl sees (it makes paths absolute); kin sees the hung mount

unshare --mount --propagation private sh -c "
	mkdir -p '$BASE' && echo \$\$ >'$BASE/cgroup.procs' || exit 99
	PATH='$HANG:$T/bin:$PATH' exec '$KIN' init --log-level debug --grace 2s --socket '$S' \
		--vm-dir '$T/vm' --zone-dir '$T/zones' --state-dir '$T/state'" >"$T/kin.log" 2>&1 &
DPID=$!
wait_for "grep -q 'ready:' '$T/kin.log'" 250

now_ms() { echo $(($(date +%s%N) / 1000000)); }
vm_state() { "$KIN" ctl --socket "$S" vm status "$1" 2>/dev/null | awk '$1 == "state:" {print $2}'; }
serving || { bad daemon_serving "no SERVING"; cat "$T/kin.log"; exit 1; }
kc cell create c

# meanwhile WHAT: while something hangs, RPC answers at once, an exit is
# reaped with its status, and SIGHUP is handled; PASS/FAIL as WHAT.
hups=0
meanwhile() {
	local fails="" t0 t1
	t0=$(now_ms)
	for _ in 1 2 3; do serving || fails="$fails health"; done
	kc exec start c "quick$hups" -- sh -c 'exit 5'
	[ $rc -eq 0 ] || fails="$fails start($rc)"
	kc exec wait c "quick$hups"
	[ $rc -eq 5 ] || fails="$fails wait($rc)"
	kill -HUP "$DPID"
	hups=$((hups + 1))
	wait_for "[ \$(grep -c 'signal 1 from pid' '$T/kin.log') -ge $hups ]" 100 || fails="$fails sighup"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 2000 ] || fails="$fails slow($((t1 - t0))ms)"
	[ -z "$fails" ] && ok "$1" || bad "$1" "while it hangs:$fails"
}

# A VMM that never opens its monitor (nor its link): the stop's
# Ctrl-Alt-Del fails at once, and the VMM is killed at the deadline.
kc vm start v1 --kernel "$T/vmlinuz" --image "$T/initrd" --accel tcg
[ $rc -eq 0 ] && out_has 'running' && ok vm_started || bad vm_started "exit $rc"
t0=$(now_ms)
"$KIN" ctl --socket "$S" vm stop --timeout 3s v1 >"$T/stop.out" 2>&1 &
SPID=$!
sleep 0.3
kill -0 $SPID 2>/dev/null && meanwhile serves_while_a_vm_stop_waits ||
	bad serves_while_a_vm_stop_waits "the stop ended at once: $(cat "$T/stop.out")"
wait $SPID
src=$?
t1=$(now_ms)
cp "$T/stop.out" "$T/out"
[ $src -eq 0 ] && out_has 'exited' && [ $((t1 - t0)) -ge 2500 ] && [ $((t1 - t0)) -lt 8000 ] &&
	ok vm_stop_kills_a_vmm_without_monitor || bad vm_stop_kills_a_vmm_without_monitor "exit $src after $((t1 - t0)) ms"

# From here on, $HANG hangs. The fd's holder is a sleep in kin's mount
# namespace; the mount is made there too.
nsenter --mount --target "$DPID" sh -c "
	exec 7<>/dev/fuse || exit 97
	mount -i -t fuse -o fd=7,rootmode=40000,user_id=0,group_id=0 kin-hang '$HANG' || exit 98
	sleep 100000 &
	echo \$! >'$T/holder.pid'" </dev/null >/dev/null 2>&1
HOLDER=$(cat "$T/holder.pid" 2>/dev/null)
[ -n "$HOLDER" ] && grep -qE " $HANG .* - fuse " /proc/"$DPID"/mountinfo && ok hung_mount_made ||
	{ bad hung_mount_made "no FUSE mount in kin's namespace"; exit 1; }

# hung NAME TEXT CMD...: CMD (a kin ctl call) hangs in the background,
# kin serves meanwhile, and CMD ends DEADLINE_EXCEEDED saying TEXT after
# ~5 s.
hung() {
	local name=$1 text=$2
	shift 2
	local t0 t1 hrc
	t0=$(now_ms)
	"$KIN" ctl --socket "$S" --timeout 30s "$@" >"$T/hung.out" 2>&1 &
	local hpid=$!
	sleep 0.5
	if ! kill -0 $hpid 2>/dev/null; then
		cp "$T/hung.out" "$T/out"
		bad "$name" "answered at once"
		return 1
	fi
	meanwhile "serves_while_${name}_hangs"
	wait $hpid
	hrc=$?
	t1=$(now_ms)
	cp "$T/hung.out" "$T/out"
	[ $hrc -eq 1 ] && out_has "DEADLINE_EXCEEDED: $text" && [ $((t1 - t0)) -ge 4500 ] &&
		[ $((t1 - t0)) -lt 12000 ] && ok "$name" || bad "$name" "exit $hrc after $((t1 - t0)) ms"
}

hung vmm_setup 'vm "v2": cannot start the VMM: exec "vms/v2/vmm": setup did not reach execve within 5000 ms' \
	vm start v2 --kernel "$T/vmlinuz" --image "$T/initrd" --accel tcg
kc vm status v2
[ $rc -eq 1 ] && out_has NOT_FOUND && [ ! -e "$CELLS/vms/v2" ] && ok vmm_setup_leaves_nothing ||
	bad vmm_setup_leaves_nothing "status exit $rc; cell $(ls -d "$CELLS/vms/v2" 2>/dev/null)"

hung vm_files 'vm "v3": checking its files: no answer within 5000 ms' \
	vm start v3 --kernel "$HANG/vmlinuz" --image "$T/initrd" --accel tcg
kc vm list
! out_has v3 && [ ! -e "$CELLS/vms/v3" ] && ok vm_files_leave_nothing || bad vm_files_leave_nothing "v3 is left"

hung zone_root 'zone "z": setup did not reach execve within 5000 ms' zone create z --root "$HANG"
kc zone list
! out_has '^z ' && [ ! -e "$CELLS/zones/z" ] && ok zone_root_leaves_nothing ||
	bad zone_root_leaves_nothing "zone z is left"

# A dead mount (its server gone) is named, not waited on; once it is
# unmounted, the names are free again.
kill -KILL "$HOLDER" 2>/dev/null # the connection aborts: ENOTCONN, no hang
HOLDER=
kc vm start v3 --kernel "$HANG/vmlinuz" --image "$T/initrd" --accel tcg
[ $rc -eq 1 ] && out_has 'kernel ".*vmlinuz": Transport endpoint is not connected' &&
	ok dead_mount_named || bad dead_mount_named "exit $rc"
nsenter --mount --target "$DPID" umount -l "$HANG"
kc vm start v2 --kernel "$T/vmlinuz" --image "$T/initrd" --accel tcg
[ $rc -eq 0 ] && out_has running && ok names_free_again || bad names_free_again "exit $rc"
kc vm stop --timeout 1s v2
kc zone create z
[ $rc -eq 0 ] && ok zone_name_free_again || bad zone_name_free_again "exit $rc"
kc zone stop z

serving && [ "$(cat "$CELLS/c/cgroup.procs" 2>/dev/null | wc -l)" -eq 0 ] && ok still_serving ||
	bad still_serving "not serving at the end"
kill -TERM "$DPID"
wait_for "! kill -0 $DPID 2>/dev/null" 500 && ok clean_stop || bad clean_stop "kin did not stop"
DPID=
clean_log "$T/kin.log" || bad no_sanitizer_reports "$(grep -m3 -E 'ERROR|runtime error' "$T/kin.log")"
ns_suite_end
